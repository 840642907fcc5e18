"""The cyclic garbage collector held off while a batch of work is done.

A worker's batch (an import chunk, a batch of runs) keeps thousands of small objects
alive at once: rows, instances, plans, the writes. The collector, triggered every 700
allocations, scans them again and again and promotes them, and soon runs a full
collection over every object of the process: that scanning was half of an import
chunk's Python time and a fifth of a resumed wait's. A batch's garbage goes by reference
counting; the few cycles it leaves are collected by the first collection after it.
"""

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic cyclic collection inside the block. Nests and may be entered by
    several threads at once: the collector resumes when the last block ends, and only if
    it was enabled when the first began."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
