"""The engine's batches: a batch of runs, of resumed waits or of trigger events writes in
as many statements for 40 as for 5, and a batch redone one by one after a failure still
sends, and starts, each run once."""

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from automations.models import AutomationEntry, AutomationRun, RunJob, RunStep, RunWait
from automations.services.advance import runs_advance_batch
from config.workqueue.models import WorkStatus
from events.hooks import register_event_handler, unregister_event_handler
from events.models import Event
from events.services.processing import events_process_batch
from messaging.models import Email, EmailDelivery, EmailStatus
from messaging.services.delivery import emails_deliver_batch
from tenancy.services import team_plan_set
from tests.automations.api_driver import automation, drain, email_template, event
from tests.factories import PlanFactory
from tests.messaging.factories_suppressions import SuppressionFactory
from tests.messaging.smtp_server import SmtpServer, smtp_server_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


def flow(*steps: dict[str, Any], **settings: Any) -> dict[str, Any]:
    """A definition on `order.completed` through `steps`, in order."""
    chained = [{**step, "next": following["key"]} for step, following in itertools.pairwise(steps)]
    chained.append({**steps[-1], "next": None})
    definition: dict[str, Any] = {
        "trigger": {"event": "order.completed"},
        "start": steps[0]["key"],
        "steps": chained,
    }
    if settings:
        definition["settings"] = settings
    return definition


def send(template_id: str) -> dict[str, Any]:
    return {"key": "welcome", "type": "send_email", "template_id": template_id}


def statements(work: Callable[[], Any]) -> tuple[Any, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        result = work()
    return result, [query["sql"] for query in captured.captured_queries]


def process_events() -> None:
    while events_process_batch().claimed:
        pass


def test_a_batch_of_one_send_runs_costs_as_many_statements_for_40_runs_as_for_5(api, key):
    automation(api, key, flow(send(email_template(api, key))))
    counts = {}
    for size in (5, 40):
        for n in range(size):
            event(api, key, "order.completed", email=f"s{size}-{n}@example.net")
        process_events()
        outcome, sql = statements(runs_advance_batch)
        assert (outcome.claimed, len(outcome.processed)) == (size, size)
        counts[size] = len(sql)
    # The claim, the locks and loads, the template, the suppression list, the inserts of
    # the emails, their deliveries and the steps, the runs' and the jobs' updates.
    assert counts[5] == counts[40] <= 24, counts
    assert set(AutomationRun.objects.values_list("status", flat=True)) == {"completed"}
    # Each run's step holds its own email, each queued once.
    steps = RunStep.objects.filter(step_key="welcome")
    assert steps.count() == steps.filter(email__isnull=False).count() == 45
    assert Email.objects.filter(status=EmailStatus.QUEUED).count() == 45
    assert EmailDelivery.objects.count() == 45
    recipients = {email.to[0] for email in Email.objects.all()}
    assert len(recipients) == 45


def test_resuming_a_batch_of_due_waits_costs_as_many_statements_for_40_as_for_5(api, key, clock):
    pause = {"key": "pause", "type": "wait", "duration": "PT1M"}
    done = {"key": "done", "type": "exit"}
    automation(api, key, flow(pause, done))
    counts = {}
    for size in (5, 40):
        for n in range(size):
            event(api, key, "order.completed", email=f"w{size}-{n}@example.net")
        drain()
        assert RunWait.objects.filter(status="waiting").count() == size
        clock.advance(minutes=1)
        outcome, sql = statements(runs_advance_batch)
        assert len(outcome.processed) == size
        counts[size] = len(sql)
    assert counts[5] == counts[40] <= 24, counts
    assert RunWait.objects.filter(status="timed_out").count() == 45
    assert RunStep.objects.filter(step_key="pause", status="completed").count() == 45
    assert RunStep.objects.filter(step_key="done").count() == 45
    assert set(AutomationRun.objects.values_list("terminal_reason", flat=True)) == {"exited"}
    assert set(RunJob.objects.values_list("status", flat=True)) == {WorkStatus.PROCESSED}


def test_a_batch_of_trigger_events_starts_its_runs_in_as_many_statements_for_40_as_for_5(api, key):
    automation(api, key, flow(send(email_template(api, key))))
    event(api, key, "order.completed", email="warm@example.net")
    process_events()  # the trigger map, built once per process
    counts = {}
    for size in (5, 40):
        for n in range(size):
            event(api, key, "order.completed", email=f"t{size}-{n}@example.net")
        _, sql = statements(events_process_batch)
        counts[size] = len([query for query in sql if "automations_" in query])
    # The project's trigger stamp, the runs, their jobs, the report's counts.
    assert counts[5] == counts[40] == 4, counts
    assert AutomationRun.objects.count() == RunJob.objects.count() == 46


def test_a_suppressed_contact_in_a_batch_marks_its_own_step_only(api, key, world):
    automation(api, key, flow(send(email_template(api, key))))
    SuppressionFactory(project=world.project, email="gone@example.net")
    for address in ("a@example.net", "gone@example.net", "b@example.net"):
        event(api, key, "order.completed", email=address)
    process_events()
    _, sql = statements(runs_advance_batch)
    assert len([query for query in sql if "messaging_suppression" in query]) == 1
    outcomes = {
        step.email.to[0]: (step.outcome, step.email.status)
        for step in RunStep.objects.select_related("email")
    }
    assert outcomes == {
        "a@example.net": (None, EmailStatus.QUEUED),
        "gone@example.net": ("suppressed", EmailStatus.SUPPRESSED),
        "b@example.net": (None, EmailStatus.QUEUED),
    }
    assert EmailDelivery.objects.count() == 2


def test_a_batch_redone_run_by_run_after_a_step_met_its_key_sends_every_other_run_once(
    api, key, smtp
):
    automation(api, key, flow(send(email_template(api, key))))
    for n in range(5):
        event(api, key, "order.completed", email=f"u{n}@example.net")
    process_events()
    # As if another delivery of one job had committed its step: the batch's writes meet
    # the key, the batch is redone run by run, and only that run fails.
    taken = AutomationRun.objects.get(contact__email="u2@example.net")
    RunStep.objects.create(
        run=taken,
        run_created_at=taken.created_at,
        step_key="welcome",
        visit=1,
        type="send_email",
        started_at=taken.created_at,
    )

    outcome = runs_advance_batch()

    assert (len(outcome.processed), outcome.failed) == (4, 1)
    job = RunJob.objects.get(run=taken)
    assert job.status == WorkStatus.FAILED
    assert "IntegrityError" in job.last_error
    while emails_deliver_batch():
        pass
    assert Email.objects.count() == 4
    received = Counter(message.message["To"] for message in smtp.received)
    assert received == Counter(f"u{n}@example.net" for n in (0, 1, 3, 4))


def test_trigger_events_redone_one_by_one_after_a_failure_start_each_run_once(api, key, clock):
    automation(api, key, flow(send(email_template(api, key))))

    def fail_when_asked(*, event: Event, contact: Any) -> None:
        if event.payload.get("fail"):
            raise RuntimeError("handler failed")

    register_event_handler(fail_when_asked)
    try:
        for n in range(5):
            event(api, key, "order.completed", email=f"e{n}@example.net", payload={"fail": n == 2})
        outcome = events_process_batch()
        assert (len(outcome.processed), outcome.failed) == (4, 1)
        assert AutomationRun.objects.count() == RunJob.objects.count() == 4
        assert not AutomationRun.objects.filter(contact__email="e2@example.net").exists()
        failed = Event.objects.get(email="e2@example.net")
        Event.objects.filter(pk=failed.pk).update(payload={"fail": False})
    finally:
        unregister_event_handler(fail_when_asked)

    clock.advance(minutes=5)  # the failed event's retry comes due
    assert failed.pk in events_process_batch().processed
    per_event = Counter(AutomationRun.objects.values_list("trigger_event_id", flat=True))
    assert len(per_event) == 5
    assert set(per_event.values()) == {1}
    assert RunJob.objects.count() == 5


def test_of_one_batch_s_events_for_a_contact_only_the_first_enters_a_once_automation(api, key):
    automation(api, key, flow(send(email_template(api, key)), reentry="once"))
    ids = [event(api, key, "order.completed", email="ada@example.net") for _ in range(3)]
    process_events()
    run = AutomationRun.objects.get()
    assert str(run.trigger_event_id) == ids[0]
    entry = AutomationEntry.objects.get()
    assert (entry.run_id, entry.correlation_value) == (run.id, None)
    assert RunJob.objects.count() == 1


def test_of_one_batch_s_events_one_run_starts_per_contact_and_correlation_value(api, key):
    automation(
        api,
        key,
        flow(
            send(email_template(api, key)),
            reentry="once_per_correlation",
            correlation_key="order_id",
        ),
    )
    for order_id in ("A", "A", "B", "A"):
        event(api, key, "order.completed", email="ada@example.net", payload={"order_id": order_id})
    event(api, key, "order.completed", email="bob@example.net", payload={"order_id": "A"})
    process_events()
    started = Counter(AutomationRun.objects.values_list("contact__email", "correlation_value"))
    assert started == {
        ("ada@example.net", "A"): 1,
        ("ada@example.net", "B"): 1,
        ("bob@example.net", "A"): 1,
    }
    assert AutomationEntry.objects.count() == RunJob.objects.count() == 3


def test_a_send_over_the_plan_s_email_quota_fails_its_own_run_and_the_batch_goes_on(
    api, key, world
):
    team_plan_set(team=world.team, plan=PlanFactory(emails_sent_per_month=2))
    automation(api, key, flow(send(email_template(api, key))))
    SuppressionFactory(project=world.project, email="gone@example.net")
    for address in ("q0@example.net", "q1@example.net", "gone@example.net", "q2@example.net"):
        event(api, key, "order.completed", email=address)
    process_events()

    outcome = runs_advance_batch()

    assert (len(outcome.processed), outcome.failed) == (4, 0)
    ended = dict(AutomationRun.objects.values_list("contact__email", "status"))
    # Suppressed: nothing to send, so no quota needed, whatever its place in the batch.
    assert ended.pop("gone@example.net") == "completed"
    assert Counter(ended.values()) == {"completed": 2, "failed": 1}
    failed = AutomationRun.objects.get(status="failed")
    assert "monthly limit of `emails_sent`" in failed.last_error
    assert sorted(Email.objects.values_list("status", flat=True)) == [
        EmailStatus.QUEUED,
        EmailStatus.QUEUED,
        EmailStatus.SUPPRESSED,
    ]
