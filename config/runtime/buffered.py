"""Records a process keeps and writes in batches from a thread of its own.

A request that records something (a usage count, a tool call's audit row) hands it to the
buffer and answers without a round trip; the buffer's thread writes what has gathered at
most every `interval()` seconds (sooner once `batch` records wait; never on a timer when
it is 0), readers in the process write it first (`flush`), and the process writes what
is left when it exits: at interpreter exit, and, in a worker process of `multiprocessing`
(granian's and Celery's workers), which leaves through `os._exit` without running
`atexit`, at its finalizers. A process killed outright loses its records of the last
interval. A write that fails keeps its records for the next one; `compact` bounds what a
long outage keeps.
"""

import atexit
import logging
import os
import threading
from collections.abc import Callable
from multiprocessing import util as multiprocessing_util
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


class BufferedWriter(Generic[T]):
    """This process's records of one kind that `write` has not taken yet."""

    def __init__(
        self,
        *,
        name: str,
        write: Callable[[list[T]], None],
        interval: Callable[[], float],
        batch: int | None = None,
        compact: Callable[[list[T]], list[T]] | None = None,
    ) -> None:
        self.name = name
        self._write = write
        self._interval = interval
        self._batch = batch
        self._compact = compact
        self._reset()
        os.register_at_fork(after_in_child=self._reset)
        atexit.register(self._flush_at_exit)

    def _reset(self) -> None:
        # Also in a forked child: the parent's records are the parent's to write, and its
        # thread and locks (perhaps held at the moment of the fork) do not exist here.
        self._lock = threading.Lock()
        # One write at a time: a reader that flushes while the thread writes waits for
        # that write, instead of reading before its records land.
        self._writing = threading.Lock()
        self._items: list[T] = []
        self.wake = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, item: T) -> None:
        """Keeps `item` for the next write."""
        with self._lock:
            self._items.append(item)
            waiting = len(self._items)
            if self._thread is None or not self._thread.is_alive():
                # A new thread starts a full interval; a wake meant for none is void.
                self.wake.clear()
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
                # Once per process (a forked child starts without a thread): a worker
                # process of multiprocessing runs its finalizers on the way out, registered
                # after it started, but not `atexit`.
                multiprocessing_util.Finalize(None, self._flush_at_exit, exitpriority=0)
        if self._batch is not None and waiting >= self._batch:
            self.wake.set()

    def pending(self) -> int:
        """How many records wait for a write."""
        with self._lock:
            return len(self._items)

    def flush(self) -> None:
        """Writes what this process holds now; raises what the write raised, keeping the
        records for the next one."""
        with self._writing:
            with self._lock:
                items, self._items = self._items, []
            if not items:
                return
            try:
                self._write(items)
            except Exception:
                with self._lock:
                    kept = items + self._items
                    self._items = self._compact(kept) if self._compact else kept
                raise

    def _run(self) -> None:
        while True:
            # An interval of 0 (or less) is no timer: the thread writes when woken.
            interval = self._interval()
            self.wake.wait(interval if interval > 0 else None)
            self.wake.clear()
            try:
                self.flush()
            except Exception:
                logger.warning("Writing the %s buffer failed; retrying", self.name, exc_info=True)

    def _flush_at_exit(self) -> None:
        try:
            self.flush()
        except Exception:
            logger.warning(
                "The %s buffer of this process was lost at exit", self.name, exc_info=True
            )
