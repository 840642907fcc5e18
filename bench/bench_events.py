"""Event ingest and processing against raw psycopg doing the same inserts in the same run.

- `events_ingest_c{1,8,32}`: single `POST /events` (a new event each request) against a
  raw single-row `INSERT ... RETURNING` of the same row.
- `events_batch500_c{1,4}`: `POST /events/batch` of 500 events, reported in events/s,
  against the same 500-row `INSERT ... SELECT FROM unnest(...)` sent by psycopg.
- `events_worker`: the worker's processing rate (claim, resolve the contact, mark
  processed, update the catalog) in events/s, in one process, against a raw psycopg loop
  that claims and marks one event per statement with `FOR UPDATE SKIP LOCKED`.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

from bench.harness import Context, log
from bench.loadgen import Measurement

CONCURRENCY = (1, 8, 32)
BATCH_CONCURRENCY = (1, 4)
BATCH_SIZE = 500
WORKER_SECONDS = 8.0

PAYLOAD = {
    "order_id": "o-1001",
    "total": 42.5,
    "currency": "EUR",
    "items": [{"sku": "a", "qty": 1}],
}
EVENT = {"event": "order.completed", "email": "bench@example.com", "payload": PAYLOAD}

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
WORKER_CODE = """
import json, time
from events.services.processing import events_process_due
started = time.monotonic()
claimed, more = events_process_due(budget_seconds={seconds})
print(json.dumps({{"claimed": claimed, "seconds": time.monotonic() - started, "more": more}}))
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
        result = ctx.result(f"events_ingest_c{clients}", measured, baseline)
        result["unit"] = "events/s"
        yield result

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
        yield _scaled(ctx.result(f"events_batch500_c{clients}", measured, baseline), BATCH_SIZE)

    yield _worker(ctx)


def _worker(ctx: Context) -> dict[str, Any]:
    """The processing rate of one worker process on the backlog the ingest runs left."""
    out = ctx.server().manage("shell", "-c", WORKER_CODE.format(seconds=WORKER_SECONDS))
    report = json.loads(out.strip().splitlines()[-1])
    if not report["more"]:
        log("the worker ran out of backlog before its time was up; the rate is a lower bound")
    rate = report["claimed"] / report["seconds"]
    baseline = ctx.sql(CLAIM_ONE, (), concurrency=1, duration=WORKER_SECONDS)
    measured = Measurement(latencies=[], seconds=report["seconds"], concurrency=1)
    result = ctx.result("events_worker", measured, baseline)
    result.update(
        {
            "ops_per_s": round(rate, 1),
            "p50_ms": None,
            "p95_ms": None,
            "ratio": round(rate / baseline.ops_per_s, 4) if baseline.ops_per_s else None,
            "unit": "events/s",
        }
    )
    return result
