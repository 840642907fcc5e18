"""The soak's worker (bench/soak.py), run in the bench server's environment by
`manage.py shell`: processes the step's sample with `events_process_batch()` until none
is left, times the periodic sweeps, and prints one JSON line.

With `statements`, it also times each SQL statement the processing ran (through the
connection's execute wrappers, so on the worker's side: the server's work and the round
trip), grouped by its text with runs of placeholders made one, and reports the costliest:
which statement, if any, costs more as the table grows."""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.skewed_clock import clock_skew

# A list of placeholders (`IN (%s, %s, ...)`, one per value): one statement whatever its
# length; and a savepoint's name, one per savepoint.
_PLACEHOLDERS = re.compile(r"%[sb](?:, %[sb])+")
_SAVEPOINT = re.compile(r'"s\d+_x\d+"')


class StatementClock:
    """The time and count of each statement run through Django's connection."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def __call__(self, execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        began = time.perf_counter()
        try:
            return execute(sql, *args)
        finally:
            key = _SAVEPOINT.sub('"s"', _PLACEHOLDERS.sub("%s...", sql))
            self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - began
            self.calls[key] = self.calls.get(key, 0) + 1

    def costliest(self, count: int) -> list[dict[str, Any]]:
        ranked = sorted(self.seconds.items(), key=lambda item: -item[1])[:count]
        return [
            {"ms": round(seconds * 1000, 1), "calls": self.calls[sql], "sql": sql[:160]}
            for sql, seconds in ranked
        ]


# Each table's block reads (in shared buffers, `hit`, or asked of the kernel, `read`),
# updates and HOT updates, and its hits in the table and in its indexes apart, from the
# statistics views, in this database.
_TABLES = (
    "SELECT s.relname, coalesce(s.heap_blks_hit, 0) + coalesce(s.idx_blks_hit, 0), "
    "coalesce(s.heap_blks_read, 0) + coalesce(s.idx_blks_read, 0), t.n_tup_upd, "
    "t.n_tup_hot_upd, coalesce(s.heap_blks_hit, 0), coalesce(s.idx_blks_hit, 0) "
    "FROM pg_statio_user_tables s JOIN pg_stat_user_tables t USING (relid)"
)
_DATABASE = (
    "SELECT blks_hit, blks_read, blk_read_time, blk_write_time FROM pg_stat_database "
    "WHERE datname = current_database()"
)


def _blocks() -> dict[str, list[float]]:
    """The statistics so far: this backend's flushed first (PostgreSQL 15 flushes a
    backend's counts at most once a second, and at once after `pg_stat_force_next_flush`)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(_TABLES)
        tables = {row[0]: [float(value) for value in row[1:]] for row in cursor.fetchall()}
        cursor.execute(_DATABASE)
        tables["(database)"] = [float(value) for value in cursor.fetchone() or ()]
    return tables


def _blocks_spent(
    before: dict[str, list[float]], after: dict[str, list[float]], count: int
) -> dict[str, list[float]]:
    """Per table, what the processing spent: blocks hit and read, updates, HOT updates,
    blocks hit in the table and in its indexes; the database's blocks hit and read and
    its block read and write milliseconds (`track_io_timing`)."""
    spent = {
        name: [round(a - b, 1) for a, b in zip(values, before.get(name, values), strict=True)]
        for name, values in after.items()
    }
    ranked = sorted(spent.items(), key=lambda item: -(item[1][0] + item[1][1]))
    return dict(ranked[:count])


@contextmanager
def _timed(clock: StatementClock | None) -> Iterator[None]:
    from django.db import connection

    if clock is None:
        yield
        return
    with connection.execute_wrapper(clock):
        yield


def _median_ms(run: Callable[[], Any], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        runs.append(time.perf_counter() - began)
    return statistics.median(runs) * 1000


def main(sweeps: dict[str, str], repeat: int, statements: int = 0) -> None:
    from celery import current_app
    from django.conf import settings

    from events.services.processing import events_process_batch

    clock_skew()
    # A sweep that finds nothing waits this long for a last look; a wait, not a cost.
    settings.EVENTS_WAKE_SETTLE_SECONDS = 0
    # A worker imports every app's tasks at start; the shell does not.
    current_app.loader.import_default_modules()
    clock = StatementClock() if statements else None
    if statements:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SET track_io_timing = on")
        before = _blocks()
    claimed, started = 0, time.perf_counter()
    finished = started
    with _timed(clock):
        while count := events_process_batch().claimed:
            claimed += count
            finished = time.perf_counter()
    blocks = _blocks_spent(before, _blocks(), statements) if statements else None
    timings = {field: _median_ms(current_app.tasks[name], repeat) for field, name in sweeps.items()}
    timings["claim_ms"] = _median_ms(events_process_batch, repeat)
    line: dict[str, Any] = {"claimed": claimed, "seconds": finished - started, **timings}
    if clock is not None:
        line["sql_s"] = round(sum(clock.seconds.values()), 2)
        line["statements"] = clock.costliest(statements)
        line["blocks"] = blocks
    print(json.dumps(line))
