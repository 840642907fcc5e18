"""Webhook delivery: pending deliveries of one endpoint sent to a loopback receiver (in a
process of its own) by the path the `webhooks.deliver` task runs, in one worker process:
claim a batch, sign each body, POST them WEBHOOK_SEND_CONCURRENCY at a time, record the
outcomes; deliveries per second. Beside it, in the same run: raw httpx posting as many
bodies, signed beforehand, to the same receiver from as many threads over one pooled
client (the network and the receiver, without claiming, signing or recording)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from bench.harness import PYTHON, ROOT, Context, StdioProcess, log
from webhooks.signing import secret_new, signature_header

DELIVERIES = int(os.environ.get("BENCH_WEBHOOK_DELIVERIES", "5000"))
# The default WEBHOOK_SEND_CONCURRENCY, which the baseline's threads match.
CONCURRENCY = 10
WORKER_BUDGET_SECONDS = 300.0
BODY = (
    '{{"type":"order_paid","timestamp":"2026-01-01T00:00:00Z","data":{{"event_id":"{id}",'
    '"event":"order_paid","contact_id":null,"email":"ada@example.com","external_id":null,'
    '"payload":{{"order":{n},"total":42.5}},"occurred_at":"2026-01-01T00:00:00Z"}}}}'
)

WORKER_CODE = """
import json, time, uuid
from config.runtime import clock
from tenancy.models import Project
from webhooks.models import DeliveryState, WebhookDelivery
from webhooks.queue import WEBHOOK_QUEUE
from webhooks.services.delivery import _Sender, webhook_deliver_batch
from webhooks.services.endpoints import webhook_endpoint_create
project = Project.objects.get(pk="{project_id}")
endpoint, _ = webhook_endpoint_create(project=project, url="{url}", event_types=["*"],
    description="bench")
now = clock.now()
ids = [uuid.uuid4() for _ in range({count})]
WebhookDelivery.objects.bulk_create([
    WebhookDelivery(project=project, endpoint=endpoint, event_id=event_id,
        event_type="order_paid", webhook_id=f"msg_{{event_id.hex}}",
        body={body!r}.format(id=event_id, n=n), next_attempt_at=now)
    for n, event_id in enumerate(ids)
], batch_size=1000)
batches = []
# As webhook_deliver_due drains (one client and set of threads for every batch), each
# batch timed.
sender = _Sender()
def timed():
    began = time.monotonic()
    claimed = webhook_deliver_batch(sender=sender)
    if claimed:
        batches.append((time.monotonic() - began) / claimed)
    return claimed
started = time.monotonic()
claimed, more = WEBHOOK_QUEUE.drain(timed, budget_seconds={seconds})
seconds = time.monotonic() - started
sender.close()
delivered = WebhookDelivery.objects.filter(endpoint=endpoint, state=DeliveryState.DELIVERED)
print(json.dumps({{"claimed": claimed, "seconds": seconds, "delivered": delivered.count(),
    "per_delivery": batches}}))
"""


def _percentile_ms(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)


def received(receiver: StdioProcess) -> int:
    receiver.write_line("count")
    return int(json.loads(receiver.read_line())["requests"])


def deliver(ctx: Context, url: str) -> dict[str, Any]:
    """The deliveries seeded and sent by one worker process; what it reported."""
    server = ctx.server()
    code = WORKER_CODE.format(
        project_id=ctx.keys()["project_id"],
        url=url,
        count=DELIVERIES,
        body=BODY,
        seconds=WORKER_BUDGET_SECONDS,
    )
    out = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env={**server.env, "WEBHOOKS_ALLOW_HTTP": "true"},
        check=True,
        capture_output=True,
        text=True,
        timeout=WORKER_BUDGET_SECONDS + 120,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def baseline(url: str) -> tuple[float, list[float]]:
    """httpx from CONCURRENCY threads over one pooled client, posting bodies signed
    beforehand: requests per second and each request's seconds."""
    secret = secret_new()
    timestamp = int(time.time())
    prepared = []
    for n in range(DELIVERIES):
        event_id = uuid.uuid4()
        body = BODY.format(id=event_id, n=n).encode()
        webhook_id = f"msg_{event_id.hex}"
        signature = signature_header(
            secrets_=[secret], webhook_id=webhook_id, timestamp=timestamp, body=body
        )
        headers = {
            "content-type": "application/json",
            "webhook-id": webhook_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature,
        }
        prepared.append((headers, body))
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    with httpx.Client(limits=limits, timeout=10) as client:

        def post(request: tuple[dict[str, str], bytes]) -> float:
            sent = time.monotonic()
            client.post(url, headers=request[0], content=request[1]).raise_for_status()
            return time.monotonic() - sent

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
            latencies = list(pool.map(post, prepared))
        seconds = time.monotonic() - started
    return DELIVERIES / seconds, latencies


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    ctx.server()
    receiver = StdioProcess("bench.webhook_receiver")
    try:
        url = receiver.read_line().strip() + "/hooks/bench"
        report = deliver(ctx, url)
        arrived = received(receiver)
        rate = report["delivered"] / report["seconds"] if report["seconds"] else 0.0
        log(
            f"worker: {report['claimed']} claimed, {report['delivered']} delivered in "
            f"{report['seconds']:.2f} s; the receiver got {arrived}"
        )
        baseline_rate, latencies = baseline(url)
        log(
            f"baseline: {DELIVERIES} posts at {baseline_rate:.0f}/s, mean "
            f"{statistics.mean(latencies) * 1000:.2f} ms"
        )
    finally:
        receiver.stop()
    per_delivery = report["per_delivery"]
    yield {
        "name": "webhooks_deliver",
        "ops_per_s": round(rate, 1),
        # A batch's seconds over its deliveries (claim, sign, send, record), per batch.
        "p50_ms": _percentile_ms(per_delivery, 0.50),
        "p95_ms": _percentile_ms(per_delivery, 0.95),
        "p99_ms": _percentile_ms(per_delivery, 0.99),
        "baseline_ops_per_s": round(baseline_rate, 1),
        "ratio": round(rate / baseline_rate, 4) if baseline_rate else None,
        "unit": "deliveries/s",
        "concurrency": CONCURRENCY,
        "deliveries": DELIVERIES,
        "baseline_p50_ms": _percentile_ms(latencies, 0.50),
        "errors": DELIVERIES - report["delivered"],
    }
