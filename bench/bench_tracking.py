"""Segment-compatible ingest against the native batch in the same run.

- `tracking_batch500_c4`: `POST /v1/batch` of 500 `track` messages (Segment's body, HTTP
  Basic with the project key as write key), reported in events/s, against `POST
  /events/batch` of the same 500 events at the same concurrency measured just before it
  (the line's `baseline`): what the Segment mapping costs over the native batch.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator
from typing import Any

from bench.harness import INGEST_EVENT, Context

BATCH_SIZE = 500
CLIENTS = 4

MESSAGE = {
    "type": "track",
    "event": "Order Completed",
    "context": {"traits": {"email": INGEST_EVENT["email"]}, "library": {"name": "bench"}},
    "properties": INGEST_EVENT["payload"],
    "timestamp": "2026-01-01T12:00:00.000Z",
    "integrations": {},
}


def _check(ctx: Context, headers: dict[str, str]) -> None:
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{ctx.server().base_url}/v1/batch",
        data=json.dumps({"batch": [MESSAGE]}).encode(),
        headers={**headers, "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
        body = json.load(response)
    if response.status != 200 or body != {"success": True}:
        raise RuntimeError(f"POST /v1/batch did not accept: {body}")


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    key = ctx.keys()["keys"]["project"]
    basic = {"Authorization": "Basic " + base64.b64encode(f"{key}:".encode()).decode()}
    _check(ctx, basic)
    native = ctx.http(
        "/events/batch",
        method="POST",
        key=key,
        body={"events": [INGEST_EVENT] * BATCH_SIZE},
        concurrency=CLIENTS,
    )
    measured = ctx.http(
        "/v1/batch",
        method="POST",
        headers=basic,
        body={"batch": [MESSAGE] * BATCH_SIZE, "sentAt": "2026-01-01T12:00:00.000Z"},
        concurrency=CLIENTS,
    )
    result = ctx.result(f"tracking_batch500_c{CLIENTS}", measured, native)
    result["ops_per_s"] = round(result["ops_per_s"] * BATCH_SIZE, 1)
    result["baseline_ops_per_s"] = round(result["baseline_ops_per_s"] * BATCH_SIZE, 1)
    result["unit"] = "events/s"
    result["baseline"] = f"events_batch500_c{CLIENTS} (POST /events/batch, this run)"
    yield result
