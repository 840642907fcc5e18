"""The engine under concurrency against PostgreSQL: a job delivered twice, two sweepers
resuming the same due waits, and a worker process killed in the middle of a batch."""

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection, connections, transaction

from automations.models import AutomationRun, RunJob, RunStep, RunWait
from automations.queue import RUN_QUEUE
from automations.services.advance import AdvanceWork, runs_advance_batch, runs_claim
from config.workqueue.models import WorkStatus
from contacts.models import Contact
from events.services.processing import events_process_batch
from messaging.models import Email
from messaging.services.delivery import emails_deliver_batch
from tests.automations.api_driver import (
    automation,
    drain,
    email_template,
    event,
)
from tests.contacts.test_contacts_races import run_in_threads
from tests.messaging.smtp_server import SmtpServer, smtp_server_for

ROOT = Path(__file__).resolve().parents[2]


def send_once(template_id: str, *, before: dict | None = None, after: dict | None = None):
    steps = [{"key": "welcome", "type": "send_email", "template_id": template_id, "next": None}]
    if before is not None:
        steps.insert(0, {**before, "next": "welcome"})
    if after is not None:
        steps[-1]["next"] = after["key"]
        steps.append(after)
    return {"trigger": {"event": "order.completed"}, "start": steps[0]["key"], "steps": steps}


@pytest.mark.django_db
def test_a_claimed_batch_worked_twice_sends_once(api, key):
    automation(api, key, send_once(email_template(api, key)))
    event(api, key, "order.completed")
    events_process_batch()
    token, jobs = runs_claim()
    assert len(jobs) == 1
    first = RUN_QUEUE.run(token=token, items=jobs, work=AdvanceWork())
    again = RUN_QUEUE.run(token=token, items=jobs, work=AdvanceWork())
    assert (len(first.processed), again.skipped) == (1, 1)
    assert Email.objects.count() == 1
    # Re-armed by mistake, the job finds the run ended and sends nothing.
    RunJob.objects.update(status=WorkStatus.ACCEPTED, next_attempt_at=jobs[0].created_at)
    assert runs_advance_batch().claimed == 1
    assert Email.objects.count() == 1


@pytest.mark.django_db
def test_a_delivery_that_finds_its_step_taken_meets_the_key_and_its_email_rolls_back(api, key):
    automation(api, key, send_once(email_template(api, key)))
    event(api, key, "order.completed")
    events_process_batch()
    run = AutomationRun.objects.get()
    # As if another delivery of this job had committed the step, but the run's state were
    # read before it: the engine computes the same (run, step, visit) and must not send.
    RunStep.objects.create(
        run=run,
        run_created_at=run.created_at,
        step_key="welcome",
        visit=1,
        type="send_email",
        started_at=run.created_at,
    )
    token, jobs = runs_claim()
    outcome = RUN_QUEUE.run(token=token, items=jobs, work=AdvanceWork())
    assert outcome.failed == 1
    assert Email.objects.count() == 0
    job = RunJob.objects.get()
    assert job.status == WorkStatus.FAILED
    assert "IntegrityError" in job.last_error


@pytest.mark.django_db(transaction=True)
def test_two_sweepers_in_parallel_resume_each_due_wait_once(api, key, clock):
    template_id = email_template(api, key)
    automation(
        api,
        key,
        send_once(template_id, before={"key": "pause", "type": "wait", "duration": "PT1M"}),
    )
    for n in range(40):
        event(api, key, "order.completed", email=f"u{n}@example.net")
    drain()
    assert RunWait.objects.filter(status="waiting").count() == 40
    clock.advance(minutes=1)

    def sweep(index: int) -> int:
        claimed = 0
        while True:
            batch = runs_advance_batch(limit=3).claimed
            if not batch:
                return claimed
            claimed += batch

    claimed = run_in_threads(2, sweep)

    assert sum(claimed) == 40
    assert all(claimed), claimed  # both took part
    assert RunWait.objects.filter(status="timed_out").count() == 40
    assert Email.objects.count() == 40
    per_run = Counter(RunStep.objects.filter(step_key="welcome").values_list("run_id", flat=True))
    assert set(per_run.values()) == {1}
    assert set(AutomationRun.objects.values_list("status", flat=True)) == {"completed"}


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def _blocked_backends() -> int:
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        )
        return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_batch_loses_no_run_and_sends_nothing_twice(api, key, smtp, settings):
    settings.AUTOMATIONS_LEASE_SECONDS = 1
    template_id = email_template(api, key)
    automation(
        api,
        key,
        send_once(
            template_id,
            after={"key": "mark", "type": "update_contact", "fields": {"done": True}, "next": None},
        ),
    )
    for n in range(6):
        event(api, key, "order.completed", email=f"u{n}@example.net")
    events_process_batch()
    assert RunJob.objects.count() == 6

    # Another transaction holds one contact's row: the worker's update_contact step of
    # that run waits for it, in the middle of its batch, with other runs already advanced
    # (and their emails stored) in the same open transaction.
    held = threading.Event()
    release = threading.Event()

    def hold_a_contact() -> None:
        try:
            with transaction.atomic():
                list(Contact.objects.select_for_update().filter(email="u3@example.net"))
                held.set()
                release.wait(60)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_a_contact)
    holder.start()
    assert held.wait(10)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _database_url(),
        "AUTOMATIONS_LEASE_SECONDS": "1",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.automations.run_worker_harness"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while _blocked_backends() == 0:
            assert time.monotonic() < deadline, "the worker never reached the held contact"
            assert worker.poll() is None, "the worker exited"
            time.sleep(0.05)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
        release.set()
        holder.join(10)

    # The killed batch committed nothing.
    assert Email.objects.count() == 0
    assert RunStep.objects.count() == 0
    time.sleep(1.2)  # its lease runs out
    while runs_advance_batch().claimed:
        pass
    while emails_deliver_batch():
        pass

    assert set(AutomationRun.objects.values_list("status", flat=True)) == {"completed"}
    assert Email.objects.count() == 6
    received = Counter(r.message["To"] for r in smtp.received)
    assert received == Counter(f"u{n}@example.net" for n in range(6))
    assert Contact.objects.filter(fields={"done": True}).count() == 6
