"""Campaign fan-out and delivery: an email campaign to `BENCH_CAMPAIGN_CONTACTS` contacts
(default 100,000), approved and sent; then

- `campaign_fanout_w2`: recipients enqueued per second by two fan-out worker processes
  (each recipient: its email rendered for it from the approved template version, under
  the campaign's (campaign, contact) key, and the email's delivery job), against the
  baseline of COPYing as many prebuilt email-shaped rows into a table with raw psycopg
  in the same run;
- `campaign_delivery_w2`: the campaign's messages handed to a local SMTP server (aiosmtpd
  in this process) per second by two delivery worker processes, against smtplib sending
  as many prebuilt messages over one reused connection.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

from bench.bench_emails import _percentile_ms, baseline_rate, prebuilt_messages, start_smtp
from bench.harness import PYTHON, ROOT, Context, log

CONTACTS = int(os.environ.get("BENCH_CAMPAIGN_CONTACTS", "100000"))
WORKERS = 2
FANOUT_BUDGET_SECONDS = float(os.environ.get("BENCH_CAMPAIGN_FANOUT_BUDGET", "180"))
DELIVERY_BUDGET_SECONDS = float(os.environ.get("BENCH_CAMPAIGN_DELIVERY_BUDGET", "120"))
# The delivery half takes a subset: every message of a 100,000-recipient campaign would
# take most of an hour to hand over on two shared cores, and `make bench` stops itself.
DELIVER = int(os.environ.get("BENCH_CAMPAIGN_DELIVER", str(min(CONTACTS, 2000))))
SUBJECT = "Spring sale, {{ contact.fields.first_name }}"
HTML = (
    "<html><head><style>p { color: #333; } .cta { font-weight: bold; }</style></head>"
    "<body><p>Hello {{ contact.fields.first_name | default: 'there' }},</p>"
    "<p>Our spring sale starts today: everything in {{ contact.fields.city }} ships free.</p>"
    "<p class='cta'><a href='https://example.com/sale'>Shop now</a></p></body></html>"
)
TEXT = "Hello {{ contact.fields.first_name }}, our spring sale starts today."

# An audience of `count` contacts written by COPY (each with `first_name` and
# `extra_fields`) and a published email template: what every campaign-sized bench seeds
# before its own objects (bench_policy.py too).
AUDIENCE_SEED_CODE = """
import json, time, uuid
from django.db import connection
from config.db.copy import copy_insert
from contacts.models import Contact
from contacts.audiences.models import Audience, AudienceMembership
from tenancy.models import Project
from messaging.services.templates import template_create, template_publish
started = time.monotonic()
project = Project.objects.get(pk="{project_id}")
project.default_from = "Bench <bench@example.com>"
project.save()
audience = Audience.objects.create(project=project, name="bench")
now = project.created_at
contacts, members = [], []
for n in range({count}):
    contact_id = uuid.uuid4()
    fields = {{"first_name": f"Ada{{n}}", **{extra_fields!r}}}
    contacts.append((contact_id, project.pk, f"user{{n}}@example.net", fields, now, now))
    members.append((uuid.uuid4(), audience.pk, contact_id, {{}}, now, now))
copy_insert(Contact, ("id", "project", "email", "fields", "created_at", "updated_at"), contacts)
copy_insert(AudienceMembership,
    ("id", "audience", "contact", "properties", "created_at", "updated_at"), members)
with connection.cursor() as cursor:
    cursor.execute("ANALYZE")
template = template_create(project=project, name="bench", channel="email", content={content})
template_publish(project=project, template_id=template.id)
"""

SEED_CODE = (
    AUDIENCE_SEED_CODE
    + """
from django.contrib.auth import get_user_model
from messaging.services.campaigns import campaign_approve, campaign_create, campaign_submit
campaign = campaign_create(project=project, channel="email", name="bench",
    template_id=template.id, audience_id=audience.id)
campaign_submit(project=project, channel="email", campaign_id=campaign.id)
staff, _ = get_user_model().objects.get_or_create(username="bench-reviewer")
campaign_approve(campaign_id=campaign.id, user_id=staff.pk)
print(json.dumps({{"campaign_id": str(campaign.id), "seconds": time.monotonic() - started}}))
"""
)

SEND_CODE = """
import json, time
from tenancy.models import Project
from messaging.services.campaign_sending import campaign_send
from messaging.services.campaigns import Actor
started = time.monotonic()
campaign = campaign_send(project=Project.objects.get(pk="{project_id}"),
    campaign_id="{campaign_id}", actor=Actor())
print(json.dumps({{"status": campaign.status, "seconds": time.monotonic() - started}}))
"""

FANOUT_WORKER_CODE = """
import json, time
from messaging.services.campaign_fanout import campaign_fanout_batch
started = time.time()
last, batches = None, 0
deadline = time.monotonic() + {seconds}
while time.monotonic() < deadline:
    claimed = campaign_fanout_batch()
    if not claimed:
        break
    batches += claimed
    last = time.time()
print(json.dumps({{"batches": batches, "started": started, "last": last}}))
"""

DELIVERY_WORKER_CODE = """
import json, time
from messaging.services.delivery import emails_deliver_due
started = time.monotonic()
claimed, more = emails_deliver_due(budget_seconds={seconds})
print(json.dumps({{"claimed": claimed, "seconds": time.monotonic() - started}}))
"""

# Recipients handled: a recipient row each, emailed or skipped (with why).
COUNT_CODE = """
import json
from messaging.models import CampaignRecipient, Email
recipients = CampaignRecipient.objects.filter(campaign_id="{campaign_id}").count()
emails = Email.objects.filter(campaign_id="{campaign_id}").count()
print(json.dumps({{"recipients": recipients, "emails": emails}}))
"""

# Delivery of only DELIVER emails: the rest stay queued, postponed out of the workers' way.
POSTPONE_CODE = """
import datetime as dt
from messaging.models import EmailDelivery
keep = list(EmailDelivery.objects.filter(email__campaign_id="{campaign_id}")
    .order_by("email_id").values_list("email_id", flat=True)[:{deliver}])
later = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)
EmailDelivery.objects.filter(email__campaign_id="{campaign_id}").exclude(
    email_id__in=keep).update(next_attempt_at=later)
"""


def _workers(code: str, env: dict[str, str]) -> list[dict[str, Any]]:
    processes = [
        subprocess.Popen(
            [PYTHON, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(WORKERS)
    ]
    reports = []
    for process in processes:
        out, _ = process.communicate(
            timeout=max(FANOUT_BUDGET_SECONDS, DELIVERY_BUDGET_SECONDS) + 120
        )
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def copy_baseline(ctx: Context, count: int) -> float:
    """Rows per second that raw psycopg COPYs into an email-shaped table."""
    import uuid

    import psycopg

    row_html = HTML.replace("{{ contact.fields.first_name | default: 'there' }}", "Ada")
    with psycopg.connect(ctx.pg_dsn()) as conn:
        conn.execute(
            "CREATE TEMP TABLE baseline_email (id uuid PRIMARY KEY, contact_id uuid, "
            "subject text, html text, text text, recipients jsonb, created_at timestamptz)"
        )
        started = time.monotonic()
        with conn.cursor().copy(
            "COPY baseline_email (id, contact_id, subject, html, text, recipients, created_at) "
            "FROM STDIN"
        ) as copy:
            for n in range(count):
                copy.write_row(
                    (
                        uuid.uuid4(),
                        uuid.uuid4(),
                        f"Spring sale, Ada{n}",
                        row_html,
                        f"Hello Ada{n}, our spring sale starts today.",
                        json.dumps([f"user{n}@example.net"]),
                        "2026-01-01T00:00:00Z",
                    )
                )
        conn.commit()
        return count / (time.monotonic() - started)


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    project_id = ctx.project("campaigns")
    server = ctx.server()
    content = json.dumps({"subject": SUBJECT, "html": HTML, "text": TEXT})
    seeded = server.manage(
        "shell",
        "-c",
        SEED_CODE.format(
            project_id=project_id,
            content=content,
            count=CONTACTS,
            extra_fields={"city": "Paris"},
        ),
    )
    seed = json.loads(seeded.strip().splitlines()[-1])
    campaign_id = seed["campaign_id"]
    log(f"seeded {CONTACTS} contacts and an approved campaign in {seed['seconds']:.1f}s")
    sent = server.manage(
        "shell",
        "-c",
        SEND_CODE.format(project_id=project_id, campaign_id=campaign_id),
    )
    log(f"send (planning the fan-out): {sent.strip().splitlines()[-1]}")

    reports = _workers(FANOUT_WORKER_CODE.format(seconds=FANOUT_BUDGET_SECONDS), server.env)
    counts = json.loads(
        server.manage("shell", "-c", COUNT_CODE.format(campaign_id=campaign_id))
        .strip()
        .splitlines()[-1]
    )
    started = min(report["started"] for report in reports)
    last = max(report["last"] or started for report in reports)
    rate = counts["recipients"] / (last - started) if last > started else 0.0
    log(f"fan-out: {counts} in {last - started:.1f}s by {reports}")
    baseline = copy_baseline(ctx, CONTACTS)
    yield {
        "name": f"campaign_fanout_w{WORKERS}",
        "ops_per_s": round(rate, 1),
        "baseline_ops_per_s": round(baseline, 1),
        "ratio": round(rate / baseline, 4) if baseline else None,
        "unit": "recipients/s",
        "concurrency": WORKERS,
        "errors": CONTACTS - counts["emails"],
    }

    server.manage("shell", "-c", POSTPONE_CODE.format(campaign_id=campaign_id, deliver=DELIVER))
    sink = start_smtp()
    port = sink.port
    try:
        env = {**server.env, "EMAIL_URL": f"smtp://127.0.0.1:{port}"}
        _workers(DELIVERY_WORKER_CODE.format(seconds=DELIVERY_BUDGET_SECONDS), env)
        arrivals = sink.take()
        if len(arrivals) < DELIVER:
            log(f"only {len(arrivals)} of {DELIVER} emails arrived")
        span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else 0.0
        delivered = (len(arrivals) - 1) / span if span else 0.0
        gaps = [(b - a) * WORKERS for a, b in itertools.pairwise(arrivals)]
        smtp_baseline, _ = baseline_rate(port, prebuilt_messages(min(DELIVER, 5000)))
    finally:
        sink.stop()
    yield {
        "name": f"campaign_delivery_w{WORKERS}",
        "ops_per_s": round(delivered, 1),
        "p50_ms": _percentile_ms(gaps, 0.50),
        "p95_ms": _percentile_ms(gaps, 0.95),
        "p99_ms": _percentile_ms(gaps, 0.99),
        "baseline_ops_per_s": round(smtp_baseline, 1),
        "ratio": round(delivered / smtp_baseline, 4) if smtp_baseline else None,
        "unit": "emails/s",
        "concurrency": WORKERS,
        "errors": DELIVER - len(arrivals),
    }
