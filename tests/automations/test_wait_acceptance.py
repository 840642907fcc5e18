"""A wait is decided by when its event was accepted, not by when a worker got to it: the
sweep does not time out a `wait_for_event` wait while an event of its name, accepted
before its deadline, is still unprocessed, and such an event, processed after the
deadline, still matches. Real rows, the service clock moved by the test."""

import datetime as dt

import pytest

from automations.models import AutomationRun, RunJob, RunWait, WaitStatus
from automations.services.advance import runs_advance_batch
from config.workqueue.models import WorkStatus
from contacts.models import Contact
from events.conf import lease_seconds
from events.models import Event, EventStatus
from events.selectors import EventWindow, events_in_windows
from events.services.processing import events_claim, events_process_batch
from tests.automations.api_driver import (
    automation,
    drain,
    event,
    one_run,
    steps_of,
)

pytestmark = pytest.mark.django_db

TIMEOUT = dt.timedelta(seconds=45)

AWAIT_REPLY = {
    "trigger": {"event": "ticket.opened"},
    "start": "await_reply",
    "steps": [
        {
            "key": "await_reply",
            "type": "wait_for_event",
            "event": "reply",
            "timeout": "PT45S",
            "next": "answered",
            "on_timeout": "gave_up",
        },
        {"key": "answered", "type": "exit", "next": None},
        {"key": "gave_up", "type": "exit", "next": None},
    ],
}


@pytest.fixture
def waiting(api, key, clock) -> str:
    """An automation whose run (for ada) waits 45 s for `reply`; the automation's id."""
    automation_id = automation(api, key, AWAIT_REPLY)
    event(api, key, "ticket.opened")
    drain()
    assert one_run(api, key, automation_id)["status"] == "waiting"
    return automation_id


def deadline() -> dt.datetime:
    return RunWait.objects.get().timeout_at


def sweep() -> int:
    """What beat's run sweep does: advance every run whose job is due."""
    claimed = 0
    while batch := runs_advance_batch().claimed:
        claimed += batch
    return claimed


def outcome(api, key, automation_id) -> tuple[str, str | None]:
    run = one_run(api, key, automation_id)
    return run["status"], steps_of(run)[0][2]


def test_an_event_accepted_before_the_deadline_and_processed_after_it_matches(
    api, key, clock, waiting
):
    clock.set(deadline() - dt.timedelta(seconds=1))
    reply_id = event(api, key, "reply")
    clock.set(deadline() + dt.timedelta(minutes=10))

    # The sweep finds the wait past its deadline, with the reply still unprocessed.
    assert sweep() == 1
    assert RunWait.objects.get().status == WaitStatus.WAITING
    assert AutomationRun.objects.get().status == "waiting"
    job = RunJob.objects.get()
    assert job.status == WorkStatus.ACCEPTED
    assert job.next_attempt_at == clock.current + dt.timedelta(seconds=5)
    # It keeps leaving it alone on every later look while the reply waits.
    clock.advance(seconds=5)
    assert sweep() == 1
    assert RunWait.objects.get().status == WaitStatus.WAITING

    drain()
    assert outcome(api, key, waiting) == ("completed", "event")
    assert str(RunWait.objects.get().matched_event_id) == reply_id


def test_an_event_accepted_at_or_after_the_deadline_neither_holds_nor_matches(
    api, key, clock, waiting
):
    clock.set(deadline())
    event(api, key, "reply")
    clock.advance(minutes=1)
    assert sweep() == 1
    assert RunWait.objects.get().status == WaitStatus.TIMED_OUT
    drain()
    assert outcome(api, key, waiting) == ("completed", "timeout")


def test_an_unprocessed_event_of_another_name_does_not_hold_the_wait(api, key, clock, waiting):
    clock.set(deadline() - dt.timedelta(seconds=1))
    event(api, key, "page.viewed")
    clock.set(deadline() + dt.timedelta(seconds=1))
    assert sweep() == 1
    assert outcome(api, key, waiting) == ("completed", "timeout")
    assert Event.objects.filter(event="page.viewed", status=EventStatus.ACCEPTED).count() == 1


def test_a_held_wait_times_out_once_the_event_turned_out_to_be_someone_elses(
    api, key, clock, waiting
):
    clock.set(deadline() - dt.timedelta(seconds=1))
    event(api, key, "reply", email="grace@example.net")
    clock.set(deadline() + dt.timedelta(seconds=1))
    assert sweep() == 1
    assert RunWait.objects.get().status == WaitStatus.WAITING

    assert events_process_batch().claimed == 1  # grace's reply: no wait of hers
    assert sweep() == 0  # the job looks again after the recheck interval
    clock.advance(seconds=5)
    assert sweep() == 1
    assert outcome(api, key, waiting) == ("completed", "timeout")


def test_an_event_held_by_a_worker_that_died_still_matches_after_its_lease(
    api, key, clock, waiting
):
    """kill -9 of the worker that claimed the reply: the row stays `processing` until its
    lease runs out, long after the wait's deadline; the sweep leaves the wait alone all
    that time and the reply matches when another worker takes it over."""
    clock.set(deadline() - dt.timedelta(seconds=40))
    reply_id = event(api, key, "reply")
    clock.advance(seconds=0.3)
    _, claimed = events_claim()  # ...and the worker dies holding it
    assert [str(e.id) for e in claimed] == [reply_id]

    for _ in range(12):  # beat's sweep every 5 s, from the deadline to the lease's end
        clock.advance(seconds=5)
        sweep()
        assert RunWait.objects.get().status == WaitStatus.WAITING
        assert Event.objects.get(id=reply_id).status == EventStatus.PROCESSING
    assert clock.current > deadline() + dt.timedelta(seconds=14)

    clock.advance(seconds=lease_seconds())
    assert events_process_batch().claimed == 1  # the expired lease is taken over
    drain()
    assert outcome(api, key, waiting) == ("completed", "event")
    assert str(RunWait.objects.get().matched_event_id) == reply_id


def test_an_event_accepted_before_the_wait_opened_does_not_match_it(api, key, clock):
    automation_id = automation(api, key, AWAIT_REPLY)
    event(api, key, "ticket.opened")
    assert events_process_batch().claimed == 1  # the run starts; its wait is not open yet
    clock.advance(seconds=1)
    event(api, key, "reply")
    clock.advance(seconds=1)
    assert runs_advance_batch().claimed == 1  # the wait opens after the reply's acceptance
    while events_process_batch().claimed:
        pass
    assert RunWait.objects.get().status == WaitStatus.WAITING
    clock.set(deadline())
    assert sweep() == 1
    assert outcome(api, key, automation_id) == ("completed", "timeout")


def test_an_event_processed_before_its_wait_was_stored_matches_at_the_deadline(
    api, key, clock, waiting
):
    """The wait is stored when its advance commits; an event accepted after the wait
    opened but processed before that commit found no wait to match. The deadline's look
    finds it among the contact's processed events of the wait's window."""
    wait = RunWait.objects.get()
    RunWait.objects.filter(id=wait.id).update(status=WaitStatus.CANCELED)  # not stored yet
    clock.advance(seconds=1)
    reply_id = event(api, key, "reply")
    while events_process_batch().claimed:
        pass
    RunWait.objects.filter(id=wait.id).update(status=WaitStatus.WAITING)  # ...now it is
    assert Event.objects.get(id=reply_id).status == EventStatus.PROCESSED

    clock.set(deadline())
    assert sweep() == 1
    assert outcome(api, key, waiting) == ("completed", "event")
    assert str(RunWait.objects.get().matched_event_id) == reply_id
    assert RunWait.objects.get().matched_payload == {}


def test_a_plain_wait_is_never_held_by_events(api, key, clock):
    definition = {
        "trigger": {"event": "signup"},
        "start": "pause",
        "steps": [{"key": "pause", "type": "wait", "duration": "PT1M", "next": None}],
    }
    automation_id = automation(api, key, definition)
    event(api, key, "signup")
    drain()
    event(api, key, "signup")  # a trigger event left unprocessed
    clock.advance(minutes=1)
    assert sweep() == 1
    assert one_run(api, key, automation_id)["status"] == "completed"


def test_the_events_accepted_in_a_window(api, key, world, clock):
    opened = clock.current
    event(api, key, "reply")
    event(api, key, "reply", email="grace@example.net")
    drain()
    ada = Contact.objects.get(email="ada@example.net")
    processed = list(Event.objects.filter(event="reply", contact=ada).values_list("id", flat=True))
    clock.advance(seconds=1)
    event(api, key, "reply", email="grace@example.net")  # unprocessed
    window = EventWindow(
        project_id=world.project.id,
        contact_id=ada.id,
        event="reply",
        opened=opened,
        deadline=opened + dt.timedelta(seconds=1),
    )
    later = EventWindow(
        project_id=world.project.id,
        contact_id=ada.id,
        event="reply",
        opened=opened + dt.timedelta(seconds=1),
        deadline=opened + dt.timedelta(seconds=2),
    )
    nobody = EventWindow(
        project_id=world.project.id,
        contact_id=None,
        event="other",
        opened=opened,
        deadline=opened + dt.timedelta(seconds=2),
    )
    found = events_in_windows(windows=[window, later, nobody])
    assert (found[0].pending, [event_id for event_id, _ in found[0].processed]) == (
        False,
        processed,
    )
    assert (found[1].pending, found[1].processed) == (True, [])
    assert (found[2].pending, found[2].processed) == (False, [])
