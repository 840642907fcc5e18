"""Automations: runs completed per second for a one-send automation (trigger event to the
email handed to a local SMTP server, two worker processes), the ingest-to-SMTP latency at
a paced event rate, events processed per second by one worker with 20 active automations
that do not match against none, the wait sweep (due waits resumed per second, and the
cost of a sweep that finds nothing due among many waits not yet due), the same one-send
backlog with a goal and a 10 % holdout on (issue 28: within 10 % of the plain one), and
the goal report over 1,000,000 runs (its summary rows filled by SQL).

Sizes are environment variables (BENCH_AUTOMATION_*); the defaults are the issue's
targets, far too big for a quick look: set small ones for a proof run.

The automations it publishes stay in the run's shared project, so they trigger on events
of their own (`bench.*`): on `order.completed`, the events bench's event, every event of
that bench's worker lines also started a run and sent an email in a full run.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

from bench.bench_emails import baseline_rate, prebuilt_messages
from bench.harness import PYTHON, ROOT, Context, log
from bench.smtp_sink import SmtpSink

RUNS = int(os.environ.get("BENCH_AUTOMATION_RUNS", "5000"))
PACED_EVENTS = int(os.environ.get("BENCH_AUTOMATION_PACED_EVENTS", "1000"))
PACED_RATE = float(os.environ.get("BENCH_AUTOMATION_PACED_RATE", "100"))
EVENTS = int(os.environ.get("BENCH_AUTOMATION_EVENTS", "20000"))
DUE_WAITS = int(os.environ.get("BENCH_AUTOMATION_DUE_WAITS", "100000"))
FUTURE_WAITS = int(os.environ.get("BENCH_AUTOMATION_FUTURE_WAITS", "1000000"))
IDLE_CLAIMS = int(os.environ.get("BENCH_AUTOMATION_IDLE_CLAIMS", "200"))
WORKERS = 2
# Rounds of the with/without comparison of non-matching automations.
ROUNDS = int(os.environ.get("BENCH_AUTOMATION_ROUNDS", "2"))
WORKER_BUDGET_SECONDS = float(os.environ.get("BENCH_AUTOMATION_WORKER_BUDGET", "300"))
REPORT_RUNS = int(os.environ.get("BENCH_AUTOMATION_REPORT_RUNS", "1000000"))
REPORT_CALLS = int(os.environ.get("BENCH_AUTOMATION_REPORT_CALLS", "200"))

SETUP_CODE = """
import json
from tenancy.models import Project
from messaging.services.templates import template_create, template_publish
from automations.services.automations import automation_create
from automations.services.lifecycle import automation_publish
project = Project.objects.get(pk="{project_id}")
template = template_create(project=project, name="bench", channel="email",
    from_email="Bench <bench@example.com>",
    content={{"subject": "t={{{{ event.payload.t }}}}", "text": "Order {{{{ event.payload.n }}}}"}})
template_publish(project=project, template_id=template.id)
def make(name, steps, start):
    automation = automation_create(project=project, name=name,
        definition={{"trigger": {{"event": name}}, "start": start, "steps": steps}})
    automation_publish(project=project, automation_id=automation.id)
    return str(automation.id)
send = make("bench.order.completed", [{{"key": "send", "type": "send_email",
    "template_id": str(template.id), "next": None}}], "send")
wait = make("bench.wait", [{{"key": "pause", "type": "wait", "duration": "PT1M", "next": "done"}},
    {{"key": "done", "type": "exit", "next": None}}], "pause")
others = [make(f"other.event_{{n}}", [{{"key": "done", "type": "exit", "next": None}}], "done")
    for n in range(20)]
print(json.dumps({{"send": send, "wait": wait}}))
"""

# The one-send automation again, on its own trigger, with a goal and a 10 % holdout.
GOAL_SETUP_CODE = """
import json
from tenancy.models import Project
from messaging.models import MessageTemplate
from automations.services.automations import automation_create
from automations.services.lifecycle import automation_publish
project = Project.objects.get(pk="{project_id}")
template = MessageTemplate.objects.filter(project=project, name="bench").first()
automation = automation_create(project=project, name="bench.order.placed", definition={{
    "trigger": {{"event": "bench.order.placed"}}, "start": "send",
    "steps": [{{"key": "send", "type": "send_email", "template_id": str(template.id),
        "next": None}}],
    "goal": {{"event": "bench.order.paid", "within": "P7D"}},
    "settings": {{"holdout_percent": 10, "exit_on_goal": True}}}})
automation_publish(project=project, automation_id=automation.id)
print(json.dumps({{"goal": str(automation.id)}}))
"""

HOLDOUTS_CODE = """
import json
from automations.models import AutomationRun
print(json.dumps({{"holdout": AutomationRun.objects.filter(automation_id="{automation_id}",
    status="holdout").count()}}))
"""

# The report's summary rows of {runs} runs of one automation over a year, as the engine
# keeps them (per day, group and shard; 90 % treated, 10 % held out, one step), by SQL:
# the report reads these, never the runs, so no run needs to exist.
REPORT_FILL_CODE = """
import json
from django.db import connection
days, shards = 365, 16
rows = days * shards
treated, held = {runs} * 9 // 10, {runs} - {runs} * 9 // 10
with connection.cursor() as cursor:
    cursor.execute(
        "INSERT INTO automations_reportcount (automation_id, day, holdout, step_key, "
        "branch_key, shard, entered, completed, converted) "
        "SELECT %s, DATE '2025-01-01' + d, g.holdout, g.step_key, '', s, "
        "g.per + CASE WHEN d = 0 AND s = 0 THEN g.rest ELSE 0 END, "
        "CASE WHEN g.step_key = '' THEN 0 ELSE g.per END, "
        "(g.per + CASE WHEN d = 0 AND s = 0 THEN g.rest ELSE 0 END) / 10 "
        "FROM generate_series(0, %s - 1) d, generate_series(0, %s - 1) s, "
        "(VALUES (false, '', %s, %s), (true, '', %s, %s), (false, 'send', %s, %s)) "
        "AS g(holdout, step_key, per, rest)",
        ["{automation_id}", days, shards, treated // rows, treated % rows, held // rows,
         held % rows, treated // rows, treated % rows])
    cursor.execute("ANALYZE automations_reportcount")
print(json.dumps({{"rows": rows * 3}}))
"""

# Events as ingest stores them, in bulk (the ingest path has its own benchmark).
EVENTS_CODE = """
import json, time, uuid
from django.utils import timezone
from contacts.models import Contact
from events.models import Event
from tenancy.models import Project
project = Project.objects.get(pk="{project_id}")
now = timezone.now()
emails = [f"user{{n}}@example.net" for n in range(min({count}, 1000))]
Contact.objects.bulk_create([Contact(project=project, email=e, fields={{}}) for e in emails],
    ignore_conflicts=True)
Event.objects.bulk_create([Event(project=project, event="{name}", email=emails[n % len(emails)],
    payload={{"n": n, "t": time.time()}}, occurred_at=now, next_attempt_at=now, created_at=now)
    for n in range({count})], batch_size=2000)
print(json.dumps({{"events": {count}}}))
"""

# The whole pipeline in one process: events, then runs, then mail, until idle.
PIPELINE_CODE = """
import json, time
from automations.services.advance import runs_advance_batch
from events.services.processing import events_process_batch
from messaging.services.delivery import emails_deliver_batch
started = time.monotonic()
deadline = started + {seconds}
idle_since = None
counts = {{"events": 0, "runs": 0, "emails": 0}}
print("ready", flush=True)
while time.monotonic() < deadline:
    events = events_process_batch().claimed
    runs = runs_advance_batch().claimed
    emails = emails_deliver_batch()
    counts["events"] += events; counts["runs"] += runs; counts["emails"] += emails
    if events or runs or emails:
        idle_since = None
        continue
    idle_since = idle_since or time.monotonic()
    if time.monotonic() - idle_since > {idle}:
        break
    time.sleep(0.01)
print(json.dumps({{**counts, "seconds": time.monotonic() - started}}))
"""

EVENT_WORKER_CODE = """
import json, time
from events.services.processing import events_process_due
started = time.monotonic()
claimed, more = events_process_due(budget_seconds={seconds})
print(json.dumps({{"claimed": claimed, "seconds": time.monotonic() - started}}))
"""

VACUUM_CODE = """
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("VACUUM ANALYZE events_event")
"""

# Runs parked on their wait, copied from one real run in SQL (bulk, like a backlog).
WAITS_CODE = """
import datetime as dt, json, time, uuid
from django.db import connection, transaction
from django.utils import timezone
from automations.models import AutomationRun, AutomationVersion
version = AutomationVersion.objects.get(automation_id="{automation_id}", state="published")
now = timezone.now()
timeout = now + dt.timedelta(seconds={offset})
with transaction.atomic():
    template = AutomationRun.objects.create(project_id=version.automation.project_id,
        automation_id=version.automation_id, version=version, trigger_event_name="bench.wait",
        status="waiting", current_step_key="pause", started_at=now)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMP TABLE bench_ids ON COMMIT DROP AS "
            "SELECT gen_random_uuid() AS id FROM generate_series(1, %s)", [{count}])
        cursor.execute(
            "INSERT INTO automations_automationrun (id, project_id, automation_id, version_id, "
            "trigger_event_name, trigger_payload, execution_mode, status, current_step_key, "
            "started_at, created_at, updated_at) SELECT b.id, r.project_id, r.automation_id, "
            "r.version_id, r.trigger_event_name, r.trigger_payload, r.execution_mode, r.status, "
            "r.current_step_key, r.started_at, r.created_at, r.updated_at "
            "FROM bench_ids b, automations_automationrun r WHERE r.id = %s", [template.id])
        cursor.execute(
            "INSERT INTO automations_runstep (id, run_id, run_created_at, step_key, visit, type, "
            "status, started_at, created_at, sequence) SELECT gen_random_uuid(), id, %s, "
            "'pause', 1, 'wait', 'waiting', %s, %s, 1 FROM bench_ids",
            [template.created_at, now, now])
        cursor.execute(
            "INSERT INTO automations_runwait (id, project_id, run_id, step_key, visit, "
            "timeout_at, status, created_at) SELECT gen_random_uuid(), %s, id, 'pause', 1, %s, "
            "'waiting', %s FROM bench_ids", [version.automation.project_id, timeout, now])
        cursor.execute(
            "INSERT INTO automations_runjob (run_id, status, attempts, next_attempt_at, "
            "last_error, error_code, created_at) SELECT id, 'accepted', 0, %s, '', '', %s "
            "FROM bench_ids", [timeout, now])
    AutomationRun.objects.filter(id=template.id).delete()
# Statistics for every table filled here, as autovacuum would gather them after such a
# load (it is off on the bench's server): without them the planner took the runs' and
# waits' tables for small, and each batch's updates joined them by a sequential scan.
with connection.cursor() as cursor:
    cursor.execute("ANALYZE automations_runjob, automations_runwait, automations_runstep, "
        "automations_automationrun")
print(json.dumps({{"waits": {count}}}))
"""

# Each sweeper reports its span on the wall clock, so that the rate of several is their
# total over the span from the first start to the last end.
SWEEP_CODE = """
import json, time
from automations.services.advance import runs_advance_due
started = time.time()
claimed, more = runs_advance_due(budget_seconds={seconds})
print(json.dumps({{"claimed": claimed, "started": started, "ended": time.time()}}))
"""

IDLE_SWEEP_CODE = """
import json, time
from django.db import connection
from automations.services.advance import runs_claim
runs_claim()
started = time.monotonic()
for _ in range({count}):
    token, jobs = runs_claim()
    assert not jobs
seconds = time.monotonic() - started
with connection.cursor() as cursor:
    cursor.execute("EXPLAIN SELECT run_id FROM automations_runjob WHERE status IN "
        "('accepted', 'failed') AND next_attempt_at <= now() ORDER BY next_attempt_at "
        "LIMIT 100 FOR UPDATE SKIP LOCKED")
    plan = " / ".join(row[0].strip() for row in cursor.fetchall())
print(json.dumps({{"ms_per_sweep": seconds / {count} * 1000, "plan": plan}}))
"""


def _json(output: str) -> dict[str, Any]:
    return dict(json.loads(output.strip().splitlines()[-1]))


def _percentile_ms(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


def _workers(env: dict[str, str], code: str, count: int) -> list[dict[str, Any]]:
    procs = [
        subprocess.Popen(
            [PYTHON, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    return [_json(proc.communicate(timeout=WORKER_BUDGET_SECONDS + 120)[0]) for proc in procs]


def _post_events(base_url: str, key: str, count: int, rate: float) -> None:
    """POST /events at `rate` per second, each carrying its send time."""
    interval = 1.0 / rate
    started = time.monotonic()
    for n in range(count):
        wait = started + n * interval - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        body = json.dumps(
            {
                "event": "bench.order.completed",
                "email": f"paced{n % 500}@example.net",
                "payload": {"n": n, "t": time.time()},
            }
        ).encode()
        request = urllib.request.Request(  # noqa: S310 (the local bench server)
            f"{base_url}/events",
            data=body,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            method="POST",
        )
        # S310: the local bench server.
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            response.read()


def _get(url: str, key: str) -> dict[str, Any]:
    request = urllib.request.Request(  # noqa: S310 (the local bench server)
        url, headers={"Authorization": f"Bearer {key}"}
    )
    # S310: the local bench server.
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return dict(json.loads(response.read())["data"])


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    keys = ctx.keys()
    server = ctx.server()
    project_id = keys["project_id"]
    ids = _json(server.manage("shell", "-c", SETUP_CODE.format(project_id=project_id)))
    # The SMTP server in a process of its own, as the email benchmarks run it.
    sink = SmtpSink()
    env = {**server.env, "EMAIL_URL": f"smtp://127.0.0.1:{sink.port}"}
    try:
        # 1. A backlog of trigger events through two workers to the SMTP server.
        server.manage(
            "shell",
            "-c",
            EVENTS_CODE.format(project_id=project_id, count=RUNS, name="bench.order.completed"),
        )
        done = _workers(env, PIPELINE_CODE.format(seconds=WORKER_BUDGET_SECONDS, idle=1.0), WORKERS)
        arrivals = sink.take()
        sink.take_latencies()
        span = max(d["seconds"] for d in done)
        rate = len(arrivals) / span if span else 0.0
        log(f"backlog: {len(arrivals)} of {RUNS} emails in {span:.1f}s; workers {done}")
        # The time between consecutive arrivals at one worker (two send in parallel), and
        # smtplib handing the same number of messages to the same server.
        gaps = [(b - a) * WORKERS for a, b in itertools.pairwise(arrivals)]
        baseline, _ = baseline_rate(sink.port, prebuilt_messages(RUNS))
        sink.take()
        plain_rate = rate
        yield {
            "name": f"automations_runs_to_smtp_w{WORKERS}",
            "ops_per_s": round(rate, 1),
            "p50_ms": _percentile_ms(gaps, 0.50),
            "p95_ms": _percentile_ms(gaps, 0.95),
            "p99_ms": _percentile_ms(gaps, 0.99),
            "baseline_ops_per_s": round(baseline, 1),
            "ratio": round(rate / baseline, 4) if baseline else None,
            "unit": "runs/s",
            "concurrency": WORKERS,
            "errors": RUNS - len(arrivals),
        }

        # 1b. The same backlog through the same automation with a goal and a 10 % holdout
        # on: runs finished per second (an email each, or a holdout run that sends none),
        # against the plain backlog's.
        goal_id = _json(
            server.manage("shell", "-c", GOAL_SETUP_CODE.format(project_id=project_id))
        )["goal"]
        server.manage(
            "shell",
            "-c",
            EVENTS_CODE.format(project_id=project_id, count=RUNS, name="bench.order.placed"),
        )
        done = _workers(env, PIPELINE_CODE.format(seconds=WORKER_BUDGET_SECONDS, idle=1.0), WORKERS)
        sent = len(sink.take())
        sink.take_latencies()
        held = _json(server.manage("shell", "-c", HOLDOUTS_CODE.format(automation_id=goal_id)))[
            "holdout"
        ]
        span = max(d["seconds"] for d in done)
        goal_rate = (sent + held) / span if span else 0.0
        log(f"goal and holdout: {sent} emails and {held} holdout runs in {span:.1f}s")
        yield {
            "name": f"automations_runs_to_smtp_goal_holdout10_w{WORKERS}",
            "ops_per_s": round(goal_rate, 1),
            "baseline_ops_per_s": round(plain_rate, 1),
            "ratio": round(goal_rate / plain_rate, 4) if plain_rate else None,
            "unit": "runs/s (aim: ratio >= 0.9)",
            "concurrency": WORKERS,
            "errors": RUNS - sent - held,
        }

        # 2. Paced events over HTTP while two workers poll: ingest to SMTP latency.
        idle = max(3.0, 5.0 / PACED_RATE)
        procs = [
            subprocess.Popen(
                [
                    PYTHON,
                    "manage.py",
                    "shell",
                    "-c",
                    PIPELINE_CODE.format(seconds=WORKER_BUDGET_SECONDS, idle=idle),
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(WORKERS)
        ]
        # Paced from when both workers poll: a worker's start (Django, imports) took
        # seconds on this machine, and the events of those seconds measured it.
        for proc in procs:
            assert proc.stdout is not None
            while proc.stdout.readline().strip() not in ("ready", ""):
                pass
        _post_events(server.base_url, keys["keys"]["project"], PACED_EVENTS, PACED_RATE)
        for proc in procs:
            proc.communicate(timeout=WORKER_BUDGET_SECONDS + 120)
        latencies = sink.take_latencies()
        log(f"paced: {len(latencies)} of {PACED_EVENTS} emails at {PACED_RATE}/s")
        yield {
            "name": f"automations_ingest_to_smtp_at_{int(PACED_RATE)}_per_s",
            "p50_ms": _percentile_ms(latencies, 0.50),
            "p95_ms": _percentile_ms(latencies, 0.95),
            "p99_ms": _percentile_ms(latencies, 0.99),
            "unit": "ms from POST /events to SMTP",
            "concurrency": WORKERS,
            "errors": PACED_EVENTS - len(latencies),
        }
    finally:
        sink.stop()

    # 3. One event worker: a backlog nobody listens to, with 20 automations on other events
    # in this project, against the same backlog in a project without automations.
    other_project = _json(
        server.manage(
            "shell",
            "-c",
            "import json; from tenancy.models import Project; "
            f"p = Project.objects.get(pk='{project_id}'); "
            "q = Project.objects.create(team=p.team, name='bench bare'); "
            "print(json.dumps({'id': str(q.id)}))",
        )
    )["id"]
    # Alternating, each on a freshly vacuumed table: PostgreSQL here runs without
    # autovacuum, and run once each, one after the other, the second worked through the
    # first's dead rows.
    claimed: dict[str, int] = {"none": 0, "twenty": 0}
    seconds: dict[str, float] = {"none": 0.0, "twenty": 0.0}
    for _ in range(ROUNDS):
        for label, project in (("none", other_project), ("twenty", project_id)):
            server.manage(
                "shell",
                "-c",
                EVENTS_CODE.format(project_id=project, count=EVENTS, name="page.viewed"),
            )
            server.manage("shell", "-c", VACUUM_CODE)
            [result] = _workers(server.env, EVENT_WORKER_CODE.format(seconds=600), 1)
            claimed[label] += result["claimed"]
            seconds[label] += result["seconds"]
            log(f"events with {label} automations: {result}")
    rates = {label: claimed[label] / seconds[label] for label in claimed}
    yield {
        "name": "automations_events_with_20_non_matching",
        "ops_per_s": round(rates["twenty"], 1),
        "baseline_ops_per_s": round(rates["none"], 1),
        "ratio": round(rates["twenty"] / rates["none"], 4) if rates["none"] else None,
        "unit": "events/s",
        "concurrency": 1,
        "errors": 0,
    }

    # 4. The sweep: due waits resumed per second by two workers, then the cost of a sweep
    # that finds nothing due among many waits not yet due.
    server.manage(
        "shell",
        "-c",
        WAITS_CODE.format(automation_id=ids["wait"], count=DUE_WAITS, offset=-60),
    )
    # Two sweepers, as deployed: the beat sweep and the wake-ups run on the worker
    # processes, and both claim due waits (the claim skips what the other holds).
    swept = _workers(server.env, SWEEP_CODE.format(seconds=WORKER_BUDGET_SECONDS), WORKERS)
    claimed_waits = sum(each["claimed"] for each in swept)
    span = max(each["ended"] for each in swept) - min(each["started"] for each in swept)
    log(f"sweep: {claimed_waits} waits in {span:.1f}s; sweepers {swept}")
    yield {
        "name": f"automations_due_waits_resumed_w{WORKERS}",
        "ops_per_s": round(claimed_waits / span, 1) if span else 0.0,
        "unit": "waits/s",
        "concurrency": WORKERS,
        "errors": DUE_WAITS - claimed_waits,
    }
    costs = {}
    for label, count in (("few", 0), ("many", FUTURE_WAITS)):
        if count:
            server.manage(
                "shell",
                "-c",
                WAITS_CODE.format(automation_id=ids["wait"], count=count, offset=86400),
            )
        [idle_sweep] = _workers(server.env, IDLE_SWEEP_CODE.format(count=IDLE_CLAIMS), 1)
        costs[label] = idle_sweep
        log(f"idle sweep with {count} waits ahead: {idle_sweep}")
    yield {
        "name": f"automations_idle_sweep_with_{FUTURE_WAITS}_waits_ahead",
        "p50_ms": round(costs["many"]["ms_per_sweep"], 3),
        "baseline_ms": round(costs["few"]["ms_per_sweep"], 3),
        "unit": "ms per sweep finding nothing due",
        "plan": costs["many"]["plan"],
        "concurrency": 1,
        "errors": 0,
    }

    # 6. The goal report over REPORT_RUNS runs of the one-send automation (summary rows
    # filled by SQL): GET /automations/{id}/report over HTTP, aim p95 < 50 ms.
    url = f"{server.base_url}/automations/{ids['send']}/report"
    key = keys["keys"]["project"]
    # The automation's own runs of the lines above count too; the fill adds REPORT_RUNS.
    before = _get(url, key)
    server.manage(
        "shell",
        "-c",
        REPORT_FILL_CODE.format(automation_id=ids["send"], runs=REPORT_RUNS),
    )
    report = _get(url, key)  # the first call warms the server's process
    timings = []
    for _ in range(REPORT_CALLS):
        started = time.monotonic()
        report = _get(url, key)
        timings.append(time.monotonic() - started)
    total = report["entered"] + report["holdout"]["entered"]
    total -= before["entered"] + before["holdout"]["entered"]
    log(f"report: {total} runs filled, lift {report['lift']} {report['lift_ci95']}")
    yield {
        "name": f"automations_report_over_{REPORT_RUNS}_runs",
        "p50_ms": _percentile_ms(timings, 0.50),
        "p95_ms": _percentile_ms(timings, 0.95),
        "p99_ms": _percentile_ms(timings, 0.99),
        "unit": "ms per GET /automations/{id}/report (aim: < 50)",
        "concurrency": 1,
        "errors": REPORT_RUNS - total,
    }
