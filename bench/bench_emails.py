"""Email delivery: emails rendered from a template and handed to a local SMTP server
(aiosmtpd in a process of its own) per second by two worker processes, beside smtplib
sending the same prebuilt messages over one reused connection to the same server in the
same run."""

from __future__ import annotations

import itertools
import json
import os
import smtplib
import subprocess
import time
from collections.abc import Iterator
from email.message import EmailMessage
from typing import Any

from bench.harness import PYTHON, ROOT, Context, log
from bench.smtp_sink import SmtpSink

EMAILS = int(os.environ.get("BENCH_EMAILS", "4000"))
WORKERS = 2
WORKER_BUDGET_SECONDS = 120.0
SUBJECT = "Your order {{ data.order }} has shipped"
HTML = (
    "<html><head><style>p { color: #333; } .total { font-weight: bold; }</style></head>"
    "<body><p>Hello {{ contact.fields.first_name | default: 'there' }},</p>"
    "<p>Order {{ data.order }} is on its way.</p><p class='total'>Total: {{ data.total }}</p>"
    "<a href='https://example.com/orders/{{ data.order }}'>Track it</a></body></html>"
)

SEED_CODE = """
import json, time
from tenancy.models import Project
from messaging.services.templates import template_create, template_publish
from messaging.services.emails import EmailRequest, email_send
project = Project.objects.get(pk="{project_id}")
template = template_create(project=project, name="bench", channel="email",
    from_email="Bench <bench@example.com>", content={content})
template_publish(project=project, template_id=template.id)
started = time.monotonic()
for n in range({count}):
    email_send(project=project, request=EmailRequest(
        to=[f"user{{n}}@example.net"], template_id=template.id,
        data={{"order": n, "total": "19.99"}}))
print(json.dumps({{"seconds": time.monotonic() - started}}))
"""

WORKER_CODE = """
import json, time
from messaging.services.delivery import emails_deliver_due
started = time.monotonic()
claimed, more = emails_deliver_due(budget_seconds={seconds})
print(json.dumps({{"claimed": claimed, "seconds": time.monotonic() - started}}))
"""


def start_smtp() -> SmtpSink:
    """The SMTP server both sides send to, in its own process."""
    return SmtpSink()


def prebuilt_messages(count: int) -> list[EmailMessage]:
    """What the workers send, built once: the baseline only transmits."""
    messages = []
    for n in range(count):
        message = EmailMessage()
        message["From"] = "Bench <bench@example.com>"
        message["To"] = f"user{n}@example.net"
        message["Subject"] = f"Your order {n} has shipped"
        message["Message-ID"] = f"<bench-{n}@example.com>"
        message.set_content(f"Hello there,\nOrder {n} is on its way.\nTotal: 19.99\n")
        message.add_alternative(f"<p style='color: #333;'>Order {n} is on its way.</p>", "html")
        messages.append(message)
    return messages


def baseline_rate(port: int, messages: list[EmailMessage]) -> tuple[float, list[float]]:
    """smtplib over one reused connection: messages per second and each send's seconds."""
    latencies = []
    with smtplib.SMTP("127.0.0.1", port) as client:
        started = time.monotonic()
        for message in messages:
            sent = time.monotonic()
            client.send_message(message)
            latencies.append(time.monotonic() - sent)
        seconds = time.monotonic() - started
    return len(messages) / seconds, latencies


def _percentile_ms(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    keys = ctx.keys()
    server = ctx.server()
    sink = start_smtp()
    port = sink.port
    try:
        content = json.dumps({"subject": SUBJECT, "html": HTML})
        seed = server.manage(
            "shell",
            "-c",
            SEED_CODE.format(project_id=keys["project_id"], content=content, count=EMAILS),
        )
        log(f"seeded {EMAILS} emails: {json.loads(seed.strip().splitlines()[-1])}")
        env = {**server.env, "EMAIL_URL": f"smtp://127.0.0.1:{port}"}
        workers = [
            subprocess.Popen(
                [
                    PYTHON,
                    "manage.py",
                    "shell",
                    "-c",
                    WORKER_CODE.format(seconds=WORKER_BUDGET_SECONDS),
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(WORKERS)
        ]
        for worker in workers:
            worker.communicate(timeout=WORKER_BUDGET_SECONDS + 60)
        arrivals = sink.take()
        if len(arrivals) < EMAILS:
            log(f"only {len(arrivals)} of {EMAILS} emails arrived")
        span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else 0.0
        rate = (len(arrivals) - 1) / span if span else 0.0
        # The time between consecutive arrivals at one worker (two send in parallel).
        gaps = [(b - a) * WORKERS for a, b in itertools.pairwise(arrivals)]
        baseline, _ = baseline_rate(port, prebuilt_messages(EMAILS))
    finally:
        sink.stop()
    yield {
        "name": f"emails_delivery_w{WORKERS}",
        "ops_per_s": round(rate, 1),
        "p50_ms": _percentile_ms(gaps, 0.50),
        "p95_ms": _percentile_ms(gaps, 0.95),
        "p99_ms": _percentile_ms(gaps, 0.99),
        "baseline_ops_per_s": round(baseline, 1),
        "ratio": round(rate / baseline, 4) if baseline else None,
        "unit": "emails/s",
        "concurrency": WORKERS,
        "errors": EMAILS - len(arrivals),
    }
