"""Event ingest and processing against raw psycopg doing the same inserts in the same run.

- `events_ingest_c{1,8,32}`: single `POST /events` (a new event each request) against a
  raw single-row `INSERT ... RETURNING` of the same row, with `ceiling_ratio` against
  `ceiling_events_ingest_c{N}` (bench/ceiling.py: the same request and INSERT with no
  framework, served by the same server, bench/ceiling_front.py), which is measured beside
  it and printed as its own line against the same raw baseline. At 8 clients the ceiling
  is measured on granian's WSGI interface too (`ceiling_wsgi_events_ingest_c8`, and
  `wsgi_ceiling_ratio` on the API's line): what the API's front costs over it.
- `events_batch500_c{1,4}`: `POST /events/batch` of 500 events, reported in events/s,
  against the same 500-row `INSERT ... SELECT FROM unnest(...)` sent by psycopg;
  `ceiling_ratio` is against the single-event ceiling at the same concurrency, in events/s
  (one event a request there), so above 1 is what batching gains over the lean path.
- `events_worker_existing`, `events_worker_new`: one worker process's processing rate
  (claim, resolve the contact, run the handlers, mark processed, count into the catalog)
  in events/s on a fresh backlog: events for 2,000 existing contacts, or events that each
  create their contact (and so a `sendrealm.contact.created` event, which the worker
  processes too: `ops_per_s` counts the backlog's events, `processed_per_s` all events).
  Latencies are per claimed batch (`latency_of`). The baseline is a raw psycopg loop that
  claims and marks one event per statement with `FOR UPDATE SKIP LOCKED`, measured before
  and after the worker (the mean is reported) so load that comes and goes weighs on both.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import psycopg

from bench.harness import INGEST_EVENT, Context, log
from bench.loadgen import Measurement

CONCURRENCY = (1, 8, 32)
# Where the ceiling is measured on granian's WSGI interface too (`ceiling_wsgi_*`).
WSGI_CEILING_CONCURRENCY = (8,)
BATCH_CONCURRENCY = (1, 4)
BATCH_SIZE = 500
WORKER_SECONDS = 8.0

EVENT = INGEST_EVENT
PAYLOAD = EVENT["payload"]

_COLUMNS = (
    "id, project_id, event, source, email, external_id, contact_ref, payload, occurred_at, "
    "idempotency_key, status, attempts, next_attempt_at, last_error, error_code, created_at"
)
INSERT_ONE = (
    f"INSERT INTO events_event ({_COLUMNS}) VALUES (gen_random_uuid(), %s, 'order.completed', "
    "'customer', 'bench@example.com', NULL, NULL, %s::jsonb, now(), NULL, 'accepted', 0, "
    "now(), '', '', now()) RETURNING id"
)
INSERT_MANY = (
    f"INSERT INTO events_event ({_COLUMNS}) SELECT gen_random_uuid(), %s, u.event, 'customer', "
    "u.email, NULL, NULL, u.payload::jsonb, now(), NULL, 'accepted', 0, now(), '', '', now() "
    "FROM unnest(%s::text[], %s::text[], %s::text[]) AS u(event, email, payload) RETURNING id"
)
CLAIM_ONE = (
    "UPDATE events_event SET status = 'processed', processed_at = now(), attempts = attempts + 1 "
    "WHERE id = (SELECT id FROM events_event WHERE status = 'accepted' "
    "ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id"
)
WORKER_CONTACTS = 2_000
# More than one worker drains in WORKER_SECONDS, so the rate is never cut short by the end
# of the backlog.
WORKER_BACKLOG = {"existing": 80_000, "new": 40_000}
BASELINE_BACKLOG = 40_000
SEED_EVENTS = (
    f"INSERT INTO events_event ({_COLUMNS}) SELECT gen_random_uuid(), %s, 'order.completed', "
    "'customer', e, NULL, NULL, %s::jsonb, now(), NULL, 'accepted', 0, now(), '', '', now() "
    "FROM unnest(%s::text[]) AS e"
)
WORKER_CODE = """
import json, time
from django.db import connection
from events.services.processing import events_process_batch
mode, seconds, project_id, payload = {mode!r}, {seconds!r}, {project_id!r}, {payload!r}
contacts, backlog = {contacts!r}, {backlog!r}
with connection.cursor() as cursor:
    # The ingest benchmarks' events (one address) are not this benchmark's backlog.
    cursor.execute("TRUNCATE events_event, events_eventkey, events_eventtype")
    if mode == "existing":
        cursor.execute(
            "INSERT INTO contacts_contact (id, project_id, email, external_id, fields, "
            "created_at, updated_at) SELECT gen_random_uuid(), %s, 'worker-' || g || "
            "'@example.com', NULL, '{{}}'::jsonb, now(), now() FROM generate_series(1, %s) g "
            "ON CONFLICT DO NOTHING",
            [project_id, contacts],
        )
        emails = [f"worker-{{n % contacts + 1}}@example.com" for n in range(backlog)]
    else:
        emails = [f"new-{{time.time_ns()}}-{{n}}@example.com" for n in range(backlog)]
    cursor.execute({seed!r}, [project_id, payload, emails])
    # Fresh statistics for every table: the contacts benchmark grew contacts_contact, and
    # without autovacuum (off on the bench machine) the planner would not know it.
    cursor.execute("ANALYZE")
connection.close()
batches = []
claimed = 0
started = time.monotonic()
deadline = started + seconds
while time.monotonic() < deadline:
    began = time.perf_counter()
    count = events_process_batch().claimed
    batches.append(time.perf_counter() - began)
    claimed += count
    if not count:
        break
elapsed = time.monotonic() - started
with connection.cursor() as cursor:
    cursor.execute(
        "SELECT count(*) FILTER (WHERE source = 'customer'), count(*) FROM events_event "
        "WHERE status = 'processed'"
    )
    customer, processed = cursor.fetchone()
print(json.dumps({{"claimed": claimed, "customer": customer, "processed": processed,
                  "seconds": elapsed, "batches": batches, "dry": count == 0}}))
"""


def _scaled(result: dict[str, Any], factor: int) -> dict[str, Any]:
    """A result in events/s instead of requests/s (the ratio is unchanged)."""
    result["ops_per_s"] = round(result["ops_per_s"] * factor, 1)
    result["baseline_ops_per_s"] = round(result["baseline_ops_per_s"] * factor, 1)
    result["unit"] = "events/s"
    return result


def _check(ctx: Context, key: str) -> None:
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{ctx.server().base_url}/events",
        data=json.dumps(EVENT).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
        body = json.load(response)
    if response.status != 202 or body["data"]["status"] != "accepted":
        raise RuntimeError(f"POST /events did not accept: {body}")


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    keys = ctx.keys()
    key, project_id = keys["keys"]["project"], keys["project_id"]
    _check(ctx, key)
    payload_json = json.dumps(PAYLOAD, separators=(",", ":"))

    for clients in CONCURRENCY:
        measured = ctx.http("/events", method="POST", key=key, body=EVENT, concurrency=clients)
        baseline = ctx.sql(INSERT_ONE, (project_id, payload_json), concurrency=clients)
        ceiling = ctx.ceiling_line("events_ingest", clients, baseline)
        ceilings = [ceiling]
        if clients in WSGI_CEILING_CONCURRENCY:
            ceilings.append(ctx.ceiling_line("events_ingest", clients, baseline, interface="wsgi"))
        result = ctx.with_ceiling(
            ctx.result(f"events_ingest_c{clients}", measured, baseline), "events_ingest"
        )
        result["unit"] = "events/s"
        yield result
        for line in ceilings:
            line["unit"] = "events/s"
            yield line

    batch = {"events": [EVENT] * BATCH_SIZE}
    arrays = (
        project_id,
        ["order.completed"] * BATCH_SIZE,
        ["bench@example.com"] * BATCH_SIZE,
        [payload_json] * BATCH_SIZE,
    )
    for clients in BATCH_CONCURRENCY:
        measured = ctx.http(
            "/events/batch", method="POST", key=key, body=batch, concurrency=clients
        )
        baseline = ctx.sql(INSERT_MANY, arrays, concurrency=clients)
        result = _scaled(ctx.result(f"events_batch500_c{clients}", measured, baseline), BATCH_SIZE)
        # In events/s: the ceiling posts one event a request.
        yield ctx.with_ceiling(result, "events_ingest")

    yield from _workers(ctx, project_id, payload_json)


def _baseline(ctx: Context, project_id: str, payload_json: str) -> Measurement:
    """The raw claim loop on a fresh backlog of its own."""
    with psycopg.connect(ctx.pg_dsn(), autocommit=True) as conn:
        conn.execute("TRUNCATE events_event, events_eventkey")
        emails = [f"baseline-{n}@example.com" for n in range(BASELINE_BACKLOG)]
        conn.execute(SEED_EVENTS, (project_id, payload_json, emails))
        conn.execute("ANALYZE events_event")
    return ctx.sql(CLAIM_ONE, (), concurrency=1, duration=WORKER_SECONDS)


def _workers(ctx: Context, project_id: str, payload_json: str) -> Iterator[dict[str, Any]]:
    """One worker process draining each backlog, between two runs of the baseline."""
    before = _baseline(ctx, project_id, payload_json)
    reports = {mode: _worker(ctx, mode, project_id, payload_json) for mode in WORKER_BACKLOG}
    after = _baseline(ctx, project_id, payload_json)
    baseline = Measurement(
        latencies=before.latencies + after.latencies,
        seconds=before.seconds + after.seconds,
        errors=before.errors + after.errors,
        concurrency=1,
    )
    for mode, report in reports.items():
        if report["dry"]:
            log(f"the {mode} backlog ran out before the time was up; the rate is a lower bound")
        batches = Measurement(latencies=report["batches"], seconds=report["seconds"])
        result = ctx.result(f"events_worker_{mode}", batches, baseline)
        rate = report["customer"] / report["seconds"]
        result.update(
            {
                "ops_per_s": round(rate, 1),
                "ratio": round(rate / baseline.ops_per_s, 4) if baseline.ops_per_s else None,
                "processed_per_s": round(report["processed"] / report["seconds"], 1),
                "unit": "events/s",
                "latency_of": "batch",
                "concurrency": 1,
            }
        )
        yield result


def _worker(ctx: Context, mode: str, project_id: str, payload_json: str) -> dict[str, Any]:
    code = WORKER_CODE.format(
        mode=mode,
        seconds=WORKER_SECONDS,
        project_id=project_id,
        payload=payload_json,
        contacts=WORKER_CONTACTS,
        backlog=WORKER_BACKLOG[mode],
        seed=SEED_EVENTS,
    )
    out = ctx.server().manage("shell", "-c", code)
    return dict(json.loads(out.strip().splitlines()[-1]))
