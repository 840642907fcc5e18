"""The delivery policy's cost (docs/API.md, Delivery policy):

- `campaign_fanout_caps_w2`: recipients enqueued per second by two fan-out worker
  processes for an email campaign to `BENCH_POLICY_CONTACTS` contacts (default 100,000)
  with two frequency caps on (loose enough to cap nobody: what is measured is the check
  and the count, not skipping), against the same campaign to the same audience with caps
  off, sent just before it in the same run (so the capped one also meets the other's
  emails in the tables: the ratio errs against the caps);
- `automations_due_deferrals_woken_w2`: sends deferred by quiet hours whose window has
  ended, woken and sent per second by two run workers (`BENCH_POLICY_DEFERRED`, default
  100,000), against as many due `wait` steps followed by the same send: the deferrals
  ride the waits' due index and sweep, so the ratio should be near 1.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

from bench.bench_automations import SWEEP_CODE, _json, _workers
from bench.bench_campaigns import AUDIENCE_SEED_CODE, FANOUT_WORKER_CODE, HTML, SUBJECT, TEXT
from bench.harness import Context, log

CONTACTS = int(os.environ.get("BENCH_POLICY_CONTACTS", "100000"))
DEFERRED = int(os.environ.get("BENCH_POLICY_DEFERRED", str(CONTACTS)))
WORKERS = 2
BUDGET_SECONDS = float(os.environ.get("BENCH_POLICY_BUDGET", "300"))
# Rounds of each comparison, the order of its two sides swapped each round (the machine's
# load drifts, and a side run later meets fuller tables); rates are totals over rounds.
ROUNDS = int(os.environ.get("BENCH_POLICY_ROUNDS", "2"))
CAPS = [
    {"channel": "email", "max": 1000, "per": "P1D"},
    {"channel": "email", "max": 100, "per": "PT1H"},
]

SEED_CODE = (
    AUDIENCE_SEED_CODE
    + """
from automations.services.automations import automation_create
from automations.services.lifecycle import automation_publish
send = {{"key": "send", "type": "send_email", "template_id": str(template.id), "next": None}}
def make(name, steps, start):
    automation = automation_create(project=project, name=name,
        definition={{"trigger": {{"event": name}}, "start": start, "steps": steps}})
    automation_publish(project=project, automation_id=automation.id)
    return str(automation.id)
deferred = make("bench.deferred", [send], "send")
waited = make("bench.waited", [{{"key": "pause", "type": "wait", "duration": "PT1M",
    "next": "send"}}, send], "pause")
print(json.dumps({{"audience_id": str(audience.id), "template_id": str(template.id),
    "deferred": deferred, "waited": waited, "seconds": time.monotonic() - started}}))
"""
)

CAMPAIGN_CODE = """
import json, time
from django.contrib.auth import get_user_model
from tenancy.models import Project
from messaging.services.campaigns import (
    Actor, campaign_approve, campaign_create, campaign_submit)
from messaging.services.campaign_sending import campaign_send
project = Project.objects.get(pk="{project_id}")
project.frequency_caps = {caps}
project.save(update_fields=["frequency_caps"])
campaign = campaign_create(project=project, channel="email", name="{name}",
    template_id="{template_id}", audience_id="{audience_id}")
campaign_submit(project=project, channel="email", campaign_id=campaign.id)
staff, _ = get_user_model().objects.get_or_create(username="bench-reviewer")
campaign_approve(campaign_id=campaign.id, user_id=staff.pk)
campaign = campaign_send(project=project, campaign_id=campaign.id, actor=Actor())
print(json.dumps({{"campaign_id": str(campaign.id), "status": campaign.status}}))
"""

COUNT_CODE = """
import json
from messaging.models import CampaignRecipient, ContactSends, Email
recipients = CampaignRecipient.objects.filter(campaign_id="{campaign_id}").count()
emails = Email.objects.filter(campaign_id="{campaign_id}").count()
print(json.dumps({{"recipients": recipients, "emails": emails,
    "contacts_counted": ContactSends.objects.count()}}))
"""

# Runs parked at `step` of the automation, one per contact, all due a minute ago: either
# a send deferred by quiet hours (its step `deferred` with `resume_at`) or a `wait`.
PARKED_CODE = """
import datetime as dt, json
from django.db import connection, transaction
from django.utils import timezone
from automations.models import AutomationVersion
from contacts.models import Contact
version = AutomationVersion.objects.get(automation_id="{automation_id}", state="published")
project_id = version.automation.project_id
now = timezone.now()
due = now - dt.timedelta(seconds=60)
kind = "{kind}"
step, step_type, status = ("send", "send_email", "deferred") if kind == "deferred" else (
    "pause", "wait", "waiting")
with transaction.atomic(), connection.cursor() as cursor:
    cursor.execute(
        "CREATE TEMP TABLE bench_runs ON COMMIT DROP AS SELECT gen_random_uuid() AS id, "
        "c.id AS contact_id FROM " + Contact._meta.db_table + " c "
        "WHERE c.project_id = %s ORDER BY c.id LIMIT %s", [project_id, {count}])
    cursor.execute(
        "INSERT INTO automations_automationrun (id, project_id, automation_id, version_id, "
        "contact_id, trigger_event_name, trigger_payload, execution_mode, status, "
        "current_step_key, started_at, created_at, updated_at) SELECT id, %s, %s, %s, "
        "contact_id, %s, '{{}}', 'live', 'waiting', %s, %s, %s, %s FROM bench_runs",
        [project_id, version.automation_id, version.id, "bench." + kind, step, now, now, now])
    cursor.execute(
        "INSERT INTO automations_runstep (id, run_id, run_created_at, step_key, visit, type, "
        "status, started_at, created_at, sequence, resume_at) SELECT gen_random_uuid(), id, "
        "%s, %s, 1, %s, %s, %s, %s, 1, %s FROM bench_runs",
        [now, step, step_type, status, now, now, due if kind == "deferred" else None])
    cursor.execute(
        "INSERT INTO automations_runwait (id, project_id, run_id, contact_id, step_key, visit, "
        "timeout_at, status, created_at) SELECT gen_random_uuid(), %s, id, contact_id, %s, 1, "
        "%s, 'waiting', %s FROM bench_runs", [project_id, step, due, now])
    cursor.execute(
        "INSERT INTO automations_runjob (run_id, status, attempts, next_attempt_at, "
        "last_error, error_code, created_at) SELECT id, 'accepted', 0, %s, '', '', %s "
        "FROM bench_runs", [due, now])
with connection.cursor() as cursor:
    cursor.execute("ANALYZE automations_runjob, automations_runwait, automations_runstep, "
        "automations_automationrun")
print(json.dumps({{"parked": {count}}}))
"""

CAPS_CODE = """
from tenancy.models import Project
Project.objects.filter(pk="{project_id}").update(frequency_caps={caps})
"""

# The side's runs moved out of the next round's count.
DONE_CODE = """
from automations.models import AutomationRun
AutomationRun.objects.filter(trigger_event_name="bench.{kind}").update(
    trigger_event_name="bench.{kind}.done")
"""

SENT_CODE = """
import json
from automations.models import AutomationRun
print(json.dumps({{"completed": AutomationRun.objects.filter(
    trigger_event_name="bench.{kind}", status="completed").count()}}))
"""


def _fan_out(
    ctx: Context, name: str, caps: list[dict[str, Any]], seed: dict[str, Any]
) -> tuple[int, float]:
    server = ctx.server()
    code = CAMPAIGN_CODE.format(
        project_id=ctx.project("policy"),
        caps=repr(caps),
        name=name,
        template_id=seed["template_id"],
        audience_id=seed["audience_id"],
    )
    campaign_id = _json(server.manage("shell", "-c", code))["campaign_id"]
    reports = _workers(server.env, FANOUT_WORKER_CODE.format(seconds=BUDGET_SECONDS), WORKERS)
    counts = _json(server.manage("shell", "-c", COUNT_CODE.format(campaign_id=campaign_id)))
    started = min(report["started"] for report in reports)
    last = max(report["last"] or started for report in reports)
    log(f"fan-out {name}: {counts} in {last - started:.1f}s")
    if counts["emails"] != CONTACTS:
        log(f"fan-out {name}: {CONTACTS - counts['emails']} recipients got no email")
    return counts["recipients"], max(last - started, 0.0)


def _wake(ctx: Context, kind: str, automation_id: str) -> tuple[int, float]:
    server = ctx.server()
    server.manage(
        "shell",
        "-c",
        PARKED_CODE.format(automation_id=automation_id, count=DEFERRED, kind=kind),
    )
    swept = _workers(server.env, SWEEP_CODE.format(seconds=BUDGET_SECONDS), WORKERS)
    span = max(each["ended"] for each in swept) - min(each["started"] for each in swept)
    completed = _json(server.manage("shell", "-c", SENT_CODE.format(kind=kind)))["completed"]
    log(f"woken {kind}: {completed} runs completed in {span:.1f}s; sweepers {swept}")
    server.manage("shell", "-c", DONE_CODE.format(kind=kind))
    return completed, span


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    server = ctx.server()
    content = json.dumps({"subject": SUBJECT, "html": HTML, "text": TEXT})
    started = time.monotonic()
    seed = _json(
        server.manage(
            "shell",
            "-c",
            SEED_CODE.format(
                project_id=ctx.project("policy"),
                content=content,
                count=CONTACTS,
                # Quiet hours read the contact's own time zone.
                extra_fields={"city": "Paris", "timezone": "Europe/Paris"},
            ),
        )
    )
    log(f"seeded {CONTACTS} contacts in {time.monotonic() - started:.1f}s")

    totals = {"off": [0, 0.0], "on": [0, 0.0]}
    for round_ in range(ROUNDS):
        sides = [("off", []), ("on", CAPS)]
        for side, caps in sides if round_ % 2 == 0 else reversed(sides):
            count, seconds = _fan_out(ctx, f"caps {side} #{round_ + 1}", caps, seed)
            totals[side][0] += count
            totals[side][1] += seconds
    off, on = (count / seconds if seconds else 0.0 for count, seconds in totals.values())
    yield {
        "name": f"campaign_fanout_caps_w{WORKERS}",
        "ops_per_s": round(on, 1),
        "baseline_ops_per_s": round(off, 1),
        "ratio": round(on / off, 4) if off else None,
        "unit": "recipients/s",
        "concurrency": WORKERS,
        "recipients": CONTACTS,
        "rounds": ROUNDS,
        "errors": 0,
    }

    # The caps stay on: a woken deferral reads and counts them as any send does (the
    # caps allow 100 an hour: the rounds' sends to one contact stay within them).
    server.manage("shell", "-c", CAPS_CODE.format(project_id=ctx.project("policy"), caps=CAPS))
    woken = {"waited": [0, 0.0], "deferred": [0, 0.0]}
    for round_ in range(ROUNDS):
        kinds = ["waited", "deferred"]
        for kind in kinds if round_ % 2 == 0 else reversed(kinds):
            count, seconds = _wake(ctx, kind, seed[kind])
            woken[kind][0] += count
            woken[kind][1] += seconds
    waits, deferrals = (count / seconds if seconds else 0.0 for count, seconds in woken.values())
    yield {
        "name": f"automations_due_deferrals_woken_w{WORKERS}",
        "ops_per_s": round(deferrals, 1),
        "baseline_ops_per_s": round(waits, 1),
        "ratio": round(deferrals / waits, 4) if waits else None,
        "unit": "sends/s",
        "concurrency": WORKERS,
        "deferred": DEFERRED,
        "rounds": ROUNDS,
        "errors": ROUNDS * 2 * DEFERRED - sum(count for count, _ in woken.values()),
    }
