"""The service's clock ahead of the machine's by `BENCH_CLOCK_OFFSET_SECONDS`, in the
processes of a soak that crosses a partition boundary (bench/soak_partitions.py): the
server's (bench/skewed_rsgi.py) and the worker's (bench/soak_worker.py)."""

import datetime as dt
import os

from config.runtime import clock


def clock_skew() -> None:
    """Moves the service's clock (config/runtime/clock.py) ahead by the offset, if any."""
    offset = dt.timedelta(seconds=float(os.environ.get("BENCH_CLOCK_OFFSET_SECONDS") or 0))
    if offset:
        clock.set_source(lambda: dt.datetime.now(dt.UTC) + offset)
