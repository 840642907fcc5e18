"""The soak across a partition boundary with a drop under load (`python -m bench.soak
--boundary-after S --drop-step N`).

- **The boundary**: the events table is partitioned by month on the events' acceptance
  time, so a soak of an hour stays in one partition. With `--boundary-after S` the
  service's clock (`bench/skewed_clock.py`: in the server's processes, through
  `bench/skewed_rsgi.py`, and in the soak's worker) runs ahead of the machine's by the
  offset that puts the next month's first instant S seconds after the soak starts: the
  events accepted after that land in the next partition (made ahead by the beat's
  `partitions.maintain`, as in production), and the worker's claims and sweeps read both.
- **The drop**: before step N, a month of old events (`--old-events`, copies of stored
  ones accepted `OLD_DAYS` earlier, past every project's retention) is put in its own
  partition; `DROP_DELAY_SECONDS` into step N's ingest, while the clients post, a second
  process runs `partitions_maintain()` as the beat would, which drops it (the parent's
  lock, `PARTITION_LOCK_TIMEOUT_SECONDS`). The step's line says what it dropped and how
  long that took; the step's batch latencies (p99, max) say what the clients felt.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from typing import Any

import psycopg

from bench.harness import Context

# The service's clock runs ahead of the machine's by this many seconds (the server's and
# the worker's; read by bench/skewed_clock.py).
OFFSET_ENV = "BENCH_CLOCK_OFFSET_SECONDS"
# Old events are this much older than the stored ones they copy: past the default
# retention (90 days), in a month of their own.
OLD_DAYS = 200
DROP_DELAY_SECONDS = 10.0

# Copies processed events `OLD_DAYS` back (new ids), into the partition made for them
# (none is left for the worker); the columns are the table's own, as the model has them.
_COLUMNS = (
    "SELECT attname FROM pg_attribute WHERE attrelid = 'events_event'::regclass "
    "AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
)
_COPY = (
    "INSERT INTO events_event ({columns}) SELECT {values} FROM events_event "
    "WHERE status = 'processed' LIMIT %s"
)
# The partitions of the events table and their rows (the planner's estimate, fresh after
# the step's VACUUM ANALYZE: counting millions of rows would cost more than the step).
PARTITION_ROWS = (
    "SELECT c.relname, greatest(c.reltuples, 0)::bigint FROM pg_inherits i "
    "JOIN pg_class c ON c.oid = i.inhrelid "
    "WHERE i.inhparent = 'events_event'::regclass ORDER BY c.relname"
)

MAKE_CODE = (
    "import datetime as dt; from config.db.partitions import partitions_make; "
    "print(partitions_make('events_event', 'created_at', "
    "now=dt.datetime.fromisoformat({at!r}), ahead=0))"
)
DROP_CODE = (
    "import json, time; from bench.skewed_clock import clock_skew; clock_skew(); "
    "from config.db.partitions import partitions_maintain; began = time.perf_counter(); "
    "done = partitions_maintain().get('events_event'); "
    "print(json.dumps({'dropped': done.dropped if done else None, "
    "'seconds': round(time.perf_counter() - began, 3)}))"
)


def next_month(moment: dt.datetime) -> dt.datetime:
    first = moment.astimezone(dt.UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return first.replace(year=first.year + first.month // 12, month=first.month % 12 + 1)


def skew_for_boundary(after_seconds: float) -> float:
    """Sets (in this process's environment, which the server's and the worker's copy) the
    offset that puts the next month's start `after_seconds` from now; returns it."""
    now = dt.datetime.now(dt.UTC)
    offset = (next_month(now) - now).total_seconds() - after_seconds
    os.environ[OFFSET_ENV] = str(offset)
    # The server's entry point (bench/harness.py): config/rsgi.py's, the clock moved first.
    os.environ["BENCH_RSGI_APPLICATION"] = "bench.skewed_rsgi:application"
    return offset


def offset_seconds() -> float:
    return float(os.environ.get(OFFSET_ENV) or 0)


def old_events_add(ctx: Context, count: int) -> dict[str, Any]:
    """`count` old events in a partition of their own (made by the kit); what was made."""
    moment = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=offset_seconds())
    old = moment - dt.timedelta(days=OLD_DAYS)
    made = ctx.server().manage("shell", "-c", MAKE_CODE.format(at=old.isoformat()))
    with psycopg.connect(ctx.pg_dsn(), autocommit=True) as conn:
        columns = [row[0] for row in conn.execute(_COLUMNS).fetchall()]
        values = [
            "gen_random_uuid()"
            if name == "id"
            else f"created_at - interval '{OLD_DAYS} days'"
            if name == "created_at"
            else name
            for name in columns
        ]
        statement = _COPY.format(columns=", ".join(columns), values=", ".join(values))
        copied = conn.execute(statement, (count,)).rowcount
    return {"made": made.strip().splitlines()[-1], "copied": copied}


class Dropper(threading.Thread):
    """Runs the beat's partition upkeep in a process of its own `delay` seconds from now
    (during the step's ingest): what it dropped and how long it took, in `result`."""

    def __init__(self, ctx: Context, delay: float = DROP_DELAY_SECONDS) -> None:
        super().__init__(daemon=True)
        self.ctx, self.delay = ctx, delay
        self.result: dict[str, Any] = {}

    def run(self) -> None:
        time.sleep(self.delay)
        began = time.monotonic()
        try:
            out = self.ctx.server().manage("shell", "-c", DROP_CODE)
            self.result = json.loads(out.strip().splitlines()[-1])
        except Exception as exc:  # reported in the step's line, not raised in a thread
            self.result = {"error": repr(exc)}
        self.result["process_s"] = round(time.monotonic() - began, 2)


def partition_rows(ctx: Context) -> dict[str, int]:
    with psycopg.connect(ctx.pg_dsn(), autocommit=True) as conn:
        return {name: int(rows) for name, rows in conn.execute(PARTITION_ROWS).fetchall()}
