"""`python -m bench.soak [--events N] [--step N] [--clients N] [--sample N]`: the soak.

Inserts `--events` events (10,000,000) through the API's write path, `POST /events/batch`,
in steps of `--step` (1,000,000; every step that size, so they compare, and slightly over
it: batches are whole and the clients share them evenly), against the production server
`make bench` starts (a fresh database), and prints one JSON line per step, then a summary:
whether ingest, processing and the periodic sweeps cost the same at the last steps as at
the first: each figure's trend, the mean of the last third of the steps against the first
third, no worse than 15 % (its spread, max/min - 1 across the steps, beside it). Not one of
`make bench`'s benchmarks, which every run would then wait on: `make soak`.

Each step:

1. Ingest: `--clients` (4) keep-alive clients post batches of 500 events until the step's
   events are stored. Every event carries an idempotency key, and each batch resends 10
   keys of the client's previous batch (its first batch: 10 of its own keys twice), so
   every batch takes the duplicate path too; 490 events a batch are new. The events name
   300 contacts by email, created through the API before the first step.
   `ingest_events_per_s` counts the events posted (duplicates included, the API's work),
   `batch_p50_ms`/`batch_p99_ms` are per request.
2. Processing, on a sample: one worker on two shared cores would take hours over every
   event, so all the step's events but the last `--sample` (20,000) ingested are marked
   processed with one SQL UPDATE (as a worker would leave them: processed, counted into
   the catalog), then VACUUM ANALYZE does what autovacuum does in production (it is off on
   the bench machine), and a worker process (`manage.py shell`) processes the sample
   with `events_process_batch()` until none is left. `process_events_per_s` is the
   sample over the time that took: the same amount of work at every step, on a table
   that grew by a step.
3. Sweeps, in the same process on the empty backlog: one run of each periodic task
   that touches the events table, called by its beat name as a worker would run it
   (`events.sweep`, `events.purge_expired`: with the default retention it deletes
   nothing, so its cost must not grow with the table), and one `events_process_batch()`,
   the claim's cost on a big table. Each is the median of `--repeat` runs (15), in ms:
   a run of a few milliseconds moves by a third with a checkpoint, and five were too few
   to tell that from a table that slows as it grows. The sweep
   runs with `EVENTS_WAKE_SETTLE_SECONDS` at 0: its last look after a pause of 0.3 s is
   a wait, not work, and would hide the rest.
4. `table_mb`: the events table with its indexes and TOAST (every partition when it is
   partitioned).

`events_total` is the customer events stored so far, as the API meters them
(`GET /project/usage`, `events_ingested`).

`--statements N` adds to each step what the sample's processing spent: its N costliest
SQL statements (time and calls, on the worker's side), `sql_s` of all of them, and per
table the blocks it hit in shared buffers and read from the kernel, its updates and HOT
updates (`blocks`, from PostgreSQL's statistics views): the figures that tell which
statement or table costs more as the table grows, on a shared machine where the
wall-clock rate moves with the other work. `--boundary-after` and `--drop-step` make it
a soak across a partition boundary with a partition dropped under load
(bench/soak_partitions.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import psycopg

from bench.harness import INGEST_EVENT, RESULTS_DIR, Context, log
from bench.loadgen import START_LEAD_SECONDS, HttpSpec, Measurement, run_clients
from bench.soak_partitions import Dropper, old_events_add, partition_rows, skew_for_boundary

BATCH_SIZE = 500
# Keys of the client's previous batch sent again in each batch: the duplicate path.
RESENT_PER_BATCH = 10
NEW_PER_BATCH = BATCH_SIZE - RESENT_PER_BATCH
CONTACTS = 300
SAMPLE = 20_000
REPEAT = 15
TOLERANCE = 0.15
# A step's clients stop after this long even if they have not posted the step's events.
STEP_MAX_SECONDS = 4 * 3600
# The figures that must stay flat from the first step to the last.
FLAT = (
    "ingest_events_per_s",
    "batch_p50_ms",
    "batch_p99_ms",
    "process_events_per_s",
    "sweep_ms",
    "purge_ms",
    "partitions_ms",
    "claim_ms",
)
# The periodic tasks timed each step, by the name beat runs them under.
SWEEPS = {
    "sweep_ms": "events.sweep",
    "purge_ms": "events.purge_expired",
    "partitions_ms": "partitions.maintain",
}

# Marks the step's events processed, all but the last `sample` ingested, as a worker
# would leave them (processed, counted into the catalog): the sample stays for the worker.
MARK_PROCESSED = (
    "UPDATE events_event SET status = 'processed', attempts = 1, processed_at = now(), "
    "cataloged_at = now(), next_attempt_at = NULL "
    "WHERE status = 'accepted' AND id NOT IN "
    "(SELECT id FROM events_event WHERE status = 'accepted' ORDER BY created_at DESC LIMIT %s)"
)
# What autovacuum does after that many updates in production (it is off on the bench
# machine): dead index entries gone from the claim's index, fresh planner statistics.
VACUUM = "VACUUM (ANALYZE) events_event"
# The events table's size with indexes and TOAST (the sum over its partitions when it is
# partitioned: pg_partition_tree has no rows for a plain table), and its idempotency keys'.
TABLE_BYTES = (
    "SELECT coalesce((SELECT sum(pg_total_relation_size(relid)) "
    "FROM pg_partition_tree('events_event')), pg_total_relation_size('events_event')) "
    "+ pg_total_relation_size('events_eventkey')"
)

# The worker (bench/soak_worker.py), in the server's environment.
WORKER_CODE = "from bench.soak_worker import main; main({sweeps!r}, {repeat}, {statements})"


def contact_email(n: int) -> str:
    return f"soak-{n % CONTACTS}@example.com"


def batch_events(tag: str, n: int) -> list[dict[str, Any]]:
    """Batch `n` of a client: 490 new keys, and 10 keys of batch `n - 1` sent again (of
    its own in batch 0)."""
    first = n * NEW_PER_BATCH
    keys = [f"soak-{tag}-{first + i}" for i in range(NEW_PER_BATCH)]
    resent_from = first - NEW_PER_BATCH if n else first
    keys += [f"soak-{tag}-{resent_from + i}" for i in range(RESENT_PER_BATCH)]
    return [
        {**INGEST_EVENT, "email": contact_email(first + i), "idempotency_key": key}
        for i, key in enumerate(keys)
    ]


@dataclass(frozen=True)
class BatchHttp:
    """Each call posts the client's next batch on its keep-alive connection; before
    `measure_from` (the load generator's warm-up) it asks `GET /health` instead, so
    only measured requests store events."""

    base_url: str
    key: str
    measure_from: float

    def open(self) -> Callable[[], bool]:
        tag, counter = uuid.uuid4().hex[:12], itertools.count()
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        health = HttpSpec.build(self.base_url, "/health")
        client: Any = health.open()

        def call() -> bool:
            if time.time() < self.measure_from:
                client.spec = health
            else:
                body = json.dumps({"events": batch_events(tag, next(counter))}).encode()
                client.spec = HttpSpec.build(
                    self.base_url, "/events/batch", method="POST", headers=headers, body=body
                )
            return bool(client())

        return call


def spread(values: Sequence[float]) -> float | None:
    """max/min - 1: how far apart the steps' figures are (None without a positive min)."""
    if not values or min(values) <= 0:
        return None
    return max(values) / min(values) - 1


# Rates (higher is better); every other flat figure is a cost (lower is better).
RATES = ("ingest_events_per_s", "process_events_per_s")


def trend(values: Sequence[float]) -> float | None:
    """The mean of the last third of the steps over the mean of the first third, less one
    (None without a positive first mean): how far a figure moved as the table grew. A
    single step's figure moves with whatever else the machine does at that moment (a
    checkpoint, another process); a third of the run averages that out."""
    third = max(len(values) // 3, 1)
    first, last = values[:third], values[-third:]
    if not values or sum(first) <= 0:
        return None
    return (sum(last) / len(last)) / (sum(first) / len(first)) - 1


def worse_by(field: str, moved: float | None) -> float | None:
    """How much worse the figure got: a rate's fall, a cost's rise (0 when it improved)."""
    if moved is None:
        return None
    return max(-moved if field in RATES else moved, 0.0)


def summary(steps: Sequence[dict[str, Any]], tolerance: float = TOLERANCE) -> dict[str, Any]:
    """The final line: for each flat figure, its spread across the steps (max/min - 1),
    its trend (the last third of the steps against the first), and whether it held:
    got no worse than `tolerance` from the first third to the last. `flat` when all held;
    storage per million events beside them."""
    spreads = {field: spread([line[field] for line in steps]) for field in FLAT}
    trends = {field: trend([line[field] for line in steps]) for field in FLAT}
    held = {
        field: (worse := worse_by(field, value)) is not None and worse <= tolerance
        for field, value in trends.items()
    }
    per_million = [
        line["table_mb"] / line["events_total"] * 1e6 for line in steps if line["events_total"]
    ]
    return {
        "name": "soak_summary",
        "steps": len(steps),
        "events_total": steps[-1]["events_total"] if steps else 0,
        "tolerance": tolerance,
        "spread": {field: _rounded(value) for field, value in spreads.items()},
        "trend": {field: _rounded(value) for field, value in trends.items()},
        "held": held,
        "flat": bool(steps) and all(held.values()),
        "table_mb_per_million_events": [round(value, 1) for value in per_million],
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _api(ctx: Context, key: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{ctx.server().base_url}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
        return json.load(response)["data"]


def _prepare(ctx: Context, key: str) -> None:
    """The contacts the events name, and one batch that shows the body is what the API
    takes: 490 accepted, 10 duplicates."""
    for n in range(CONTACTS):
        _api(ctx, key, "POST", "/contacts/upsert", {"email": contact_email(n)})
    answer = _api(ctx, key, "POST", "/events/batch", {"events": batch_events("check", 0)})
    if (answer["accepted"], answer["duplicates"]) != (NEW_PER_BATCH, RESENT_PER_BATCH):
        raise RuntimeError(f"POST /events/batch answered unexpectedly: {answer}")


def _ingest(ctx: Context, key: str, events: int, clients: int) -> Measurement:
    """`clients` clients posting batches until about `events` new events are stored."""
    requests = math.ceil(events / NEW_PER_BATCH)
    # Computed just before the load generator computes its own start, so a call made in
    # its warm-up never posts a batch.
    measure_from = time.time() + START_LEAD_SECONDS
    # Shaped like the load generator's specs (`open()`), as bench_contacts's are.
    spec: Any = BatchHttp(ctx.server().base_url, key, measure_from)
    measured = run_clients(
        spec,
        concurrency=clients,
        requests=requests,
        processes=min(clients, ctx.settings.client_processes),
        max_seconds=STEP_MAX_SECONDS,
    )
    if measured.errors:
        log(f"{measured.errors} failed batch requests, first: {measured.first_error}")
    return measured


def _leave_sample(ctx: Context, sample: int) -> tuple[float, float]:
    """Marks all but the sample processed and vacuums; the seconds each took."""
    with psycopg.connect(ctx.pg_dsn(), autocommit=True) as conn:
        began = time.perf_counter()
        conn.execute(MARK_PROCESSED, (sample,))
        marked = time.perf_counter()
        conn.execute(VACUUM)
        return marked - began, time.perf_counter() - marked


def _table_mb(ctx: Context) -> float:
    with psycopg.connect(ctx.pg_dsn(), autocommit=True) as conn:
        row = conn.execute(TABLE_BYTES).fetchone()
    return float(row[0] if row else 0) / 1e6


def _events_stored(ctx: Context, key: str, since: dt.date) -> int:
    """The project's `events_ingested` since the soak began; the server's processes add
    their counts to the meter every second, so it waits that long first."""
    time.sleep(1.5)
    usage = _api(ctx, key, "GET", f"/project/usage?from={since.isoformat()}")
    return int(usage["totals"]["events_ingested"])


def soak(
    ctx: Context,
    *,
    events: int,
    step: int,
    clients: int,
    sample: int,
    repeat: int = REPEAT,
    statements: int = 0,
    boundary_after: float | None = None,
    drop_step: int | None = None,
    old_events: int = 0,
) -> Iterator[Any]:
    if boundary_after is not None:
        # Before the server starts: its processes read the offset from the environment.
        log(f"the clock runs {skew_for_boundary(boundary_after):.0f} s ahead")
    keys = ctx.keys()
    key = keys["keys"]["project"]
    since = dt.datetime.now(dt.UTC).date()
    _prepare(ctx, key)
    steps: list[dict[str, Any]] = []
    stored = NEW_PER_BATCH  # the check's batch
    # Every step the same size, so their figures compare; the last may pass `events`.
    count = math.ceil(events / step)
    for number in range(1, count + 1):
        began = time.monotonic()
        dropping: Dropper | None = None
        if number == drop_step:
            old = old_events_add(ctx, old_events)
            log(f"old events: {old}")
            dropping = Dropper(ctx)
            dropping.start()
        measured = _ingest(ctx, key, step, clients)
        if dropping is not None:
            dropping.join()
        log(f"step {number}/{count}: {measured.count} batches in {measured.seconds:.0f} s")
        mark_s, vacuum_s = _leave_sample(ctx, sample)
        code = WORKER_CODE.format(sweeps=SWEEPS, repeat=repeat, statements=statements)
        out = ctx.server().manage("shell", "-c", code)
        worker = json.loads(out.strip().splitlines()[-1])
        before, stored = stored, _events_stored(ctx, key, since)
        if stored <= before:
            raise RuntimeError(f"the step stored no events ({measured.first_error})")
        line = {
            "name": "soak_step",
            "events_total": stored,
            "ingest_events_per_s": round(measured.ops_per_s * BATCH_SIZE, 1),
            "batch_p50_ms": round(measured.percentile_ms(0.50), 1),
            "batch_p99_ms": round(measured.percentile_ms(0.99), 1),
            "process_events_per_s": round(worker["claimed"] / worker["seconds"], 1)
            if worker["seconds"]
            else 0.0,
            "sweep_ms": round(worker["sweep_ms"], 2),
            "purge_ms": round(worker["purge_ms"], 2),
            "partitions_ms": round(worker["partitions_ms"], 2),
            "claim_ms": round(worker["claim_ms"], 2),
            "table_mb": round(_table_mb(ctx), 1),
            "batches": measured.count,
            "errors": measured.errors,
            "sample": worker["claimed"],
            "mark_s": round(mark_s, 1),
            "vacuum_s": round(vacuum_s, 1),
            "step_s": round(time.monotonic() - began, 1),
        }
        if statements:
            line.update({key: worker[key] for key in ("sql_s", "statements", "blocks")})
        if boundary_after is not None or drop_step is not None:
            line.update(batch_max_ms=round(measured.percentile_ms(1.0), 1))
            line.update(partitions=partition_rows(ctx))
        if dropping is not None:
            line.update(old_events=old, drop=dropping.result)
        steps.append(line)
        yield line
    yield summary(steps)


class Stop(Exception):
    pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--events", type=int, default=10_000_000, help="events in all")
    parser.add_argument("--step", type=int, default=1_000_000, help="events a step")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients")
    parser.add_argument(
        "--sample", type=int, default=SAMPLE, help="events of each step a worker processes"
    )
    parser.add_argument(
        "--repeat", type=int, default=REPEAT, help="runs of each sweep, of which the median"
    )
    parser.add_argument(
        "--statements",
        type=int,
        default=0,
        help="report the sample's N costliest SQL statements each step (time and calls)",
    )
    parser.add_argument(
        "--boundary-after",
        type=float,
        help="run the service's clock ahead so the next month (partition) starts this many "
        "seconds into the soak (bench/soak_partitions.py)",
    )
    parser.add_argument(
        "--drop-step",
        type=int,
        help="add a partition of old events before this step and drop it during its ingest",
    )
    parser.add_argument(
        "--old-events", type=int, default=100_000, help="events in the partition dropped"
    )
    args = parser.parse_args(argv)
    if min(args.events, args.step, args.clients, args.sample, args.repeat) < 1:
        parser.error("--events, --step, --clients, --sample and --repeat must be positive")

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise Stop(signal.Signals(signum).name)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)

    ctx = Context()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out_path = RESULTS_DIR / time.strftime("soak-%Y%m%d-%H%M%S.jsonl")
    log(
        f"soak: {args.events:,} events in steps of {args.step:,}, {args.clients} clients, "
        f"a sample of {args.sample:,} processed each step (the rest marked by SQL)"
    )
    failed = False
    try:
        with Path(out_path).open("w") as out:
            for result in soak(
                ctx,
                events=args.events,
                step=args.step,
                clients=args.clients,
                sample=args.sample,
                repeat=args.repeat,
                statements=args.statements,
                boundary_after=args.boundary_after,
                drop_step=args.drop_step,
                old_events=args.old_events,
            ):
                line = json.dumps(result)
                print(line, flush=True)
                out.write(line + "\n")
                out.flush()
    except Stop as stop:
        log(f"stopped ({stop})")
        failed = True
    except subprocess.CalledProcessError as exc:
        log(f"the worker process failed:\n{exc.stderr}")
        failed = True
    except Exception as exc:
        log(f"the soak failed: {exc!r}")
        failed = True
    finally:
        ctx.close()
    log(f"results in {out_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
