"""The run engine through the API: templates and automations made and published over HTTP,
events ingested with POST /events, and the workers (event processing, run advancing,
delivery) run in-process until nothing is due; mail arrives at a real SMTP server."""

import uuid
from collections.abc import Iterator

import pytest

from automations.models import AutomationEntry, AutomationRun, RunJob
from config.workqueue.models import WorkStatus
from contacts.models import Contact
from events.models import Event
from events.services.processing import events_process_batch
from messaging.models import Email, EmailStatus
from tests.automations.api_driver import (
    action,
    automation,
    drain,
    email_template,
    event,
    one_run,
    runs,
    send_then_await,
    steps_of,
)
from tests.messaging.smtp_server import SmtpServer, smtp_server_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


def texts(smtp):
    return [r.message.get_body(("plain",)).get_content().strip() for r in smtp.received]


def test_a_trigger_sends_the_email_waits_and_the_awaited_event_completes_the_run(
    api, world, key, smtp, clock
):
    welcome = email_template(api, key)
    thanks = email_template(
        api,
        key,
        name="Thanks",
        subject="Rated {{ steps.await_review.event.payload.rating }}",
        text="You gave {{ steps.await_review.event.payload.rating }} stars",
        html="<p>{{ steps.await_review.event.payload.rating }}</p>",
    )
    definition = send_then_await(welcome)
    definition["steps"][3]["next"] = "say_thanks"
    definition["steps"].append(
        {"key": "say_thanks", "type": "send_email", "template_id": thanks, "next": None}
    )
    automation_id = automation(api, key, definition)
    trigger_id = event(api, key, "order.completed", payload={"order_id": "A-1"})

    drain()

    assert texts(smtp) == ["Order A-1"]
    run = one_run(api, key, automation_id)
    assert run["status"] == "waiting"
    assert run["trigger_event_id"] == trigger_id
    assert run["resolved_identity_type"] == "email"
    assert run["resolved_identity_value"] == "ada@example.net"
    assert steps_of(run) == [("welcome", "completed", None), ("await_review", "waiting", None)]
    assert run["steps"][0]["email_id"] == str(Email.objects.get().id)
    [wait] = run["waits"]
    assert wait["event"] == "review.submitted"
    assert wait["status"] == "waiting"
    assert wait["timeout_at"] == "2026-01-08T12:00:00Z"

    clock.advance(hours=2)
    review_id = event(api, key, "review.submitted", payload={"rating": 5})
    drain()

    run = one_run(api, key, automation_id)
    assert run["status"] == "completed"
    assert run["terminal_reason"] == "completed"
    assert run["completed_step_key"] == "say_thanks"
    assert steps_of(run) == [
        ("welcome", "completed", None),
        ("await_review", "completed", "event"),
        ("check", "completed", "then"),
        ("tag_happy", "completed", None),
        ("say_thanks", "completed", None),
    ]
    assert run["waits"][0]["status"] == "matched"
    assert run["waits"][0]["matched_event_id"] == review_id
    assert texts(smtp) == ["Order A-1", "You gave 5 stars"]
    assert smtp.received[1].message["Subject"] == "Rated 5"
    assert Contact.objects.get(email="ada@example.net").fields == {"happy": True}
    assert RunJob.objects.get().status == WorkStatus.PROCESSED


def test_a_wait_that_times_out_takes_the_timeout_path_at_its_deadline(api, key, smtp, clock):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    event(api, key, "order.completed", payload={"order_id": "A-1"})
    drain()

    clock.advance(days=7, seconds=-1)
    drain()
    assert one_run(api, key, automation_id)["status"] == "waiting"

    clock.advance(seconds=1)
    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "completed"
    assert run["terminal_reason"] == "exited"
    assert run["completed_step_key"] == "gave_up"
    assert steps_of(run)[1:] == [
        ("await_review", "completed", "timeout"),
        ("gave_up", "completed", None),
    ]
    assert run["waits"][0]["status"] == "timed_out"
    # An event after the timeout finds no wait.
    event(api, key, "review.submitted", payload={"rating": 5})
    drain()
    assert one_run(api, key, automation_id)["steps"] == run["steps"]


def test_an_event_for_another_contact_does_not_complete_the_wait(api, key, smtp):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    event(api, key, "order.completed")
    drain()
    event(api, key, "review.submitted", email="grace@example.net", payload={"rating": 5})
    drain()
    assert one_run(api, key, automation_id)["status"] == "waiting"


def test_a_wait_is_matched_by_the_identity_processing_resolved_first(api, key, smtp):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    event(api, key, "order.completed")
    drain()
    ada = Contact.objects.get(email="ada@example.net")
    # contact_id comes first: the email of someone else does not matter.
    event(
        api,
        key,
        "review.submitted",
        contact_id=str(ada.id),
        email="grace@example.net",
        payload={"rating": 1},
    )
    drain()
    assert one_run(api, key, automation_id)["waits"][0]["status"] == "matched"


def test_a_correlated_wait_only_takes_the_event_with_the_same_value(api, key, smtp):
    definition = send_then_await(email_template(api, key), settings={"correlation_key": "order_id"})
    automation_id = automation(api, key, definition)
    event(api, key, "order.completed", payload={"order_id": "A-1"})
    event(api, key, "order.completed", payload={"order_id": "B-2"})
    drain()
    event(api, key, "review.submitted", payload={"order_id": "B-2", "rating": 5})
    drain()

    by_order = {r["correlation"]["value"]: r for r in runs(api, key, automation_id)}
    assert by_order["A-1"]["status"] == "waiting"
    assert by_order["B-2"]["status"] == "completed"
    assert by_order["B-2"]["correlation"] == {"key": "order_id", "value": "B-2"}
    assert by_order["B-2"]["waits"][0]["correlation"] == {"key": "order_id", "value": "B-2"}


def exit_only(event_name: str = "order.completed", **settings):
    definition = {
        "trigger": {"event": event_name},
        "start": "done",
        "steps": [{"key": "done", "type": "exit", "next": None}],
    }
    if settings:
        definition["settings"] = settings
    return definition


@pytest.mark.parametrize(
    ("settings", "payloads", "expected"),
    [
        ({}, ["A", "A", "B"], 3),
        ({"reentry": "always"}, ["A", "B"], 2),
        ({"reentry": "once"}, ["A", "A", "B"], 1),
        (
            {"reentry": "once_per_correlation", "correlation_key": "order_id"},
            ["A", "A", "B", None],
            2,
        ),
    ],
)
def test_reentry_decides_how_many_runs_a_contact_gets(api, key, settings, payloads, expected):
    automation_id = automation(api, key, exit_only(**settings))
    for order in payloads:
        event(api, key, "order.completed", payload={} if order is None else {"order_id": order})
    drain()
    found = runs(api, key, automation_id)
    assert len(found) == expected
    assert {r["status"] for r in found} == {"completed"}
    if settings.get("reentry", "always") != "always":
        assert AutomationEntry.objects.count() == expected


def test_once_counts_per_contact(api, key):
    automation_id = automation(api, key, exit_only(reentry="once"))
    event(api, key, "order.completed")
    event(api, key, "order.completed", email="grace@example.net")
    event(api, key, "order.completed")
    drain()
    assert len(runs(api, key, automation_id)) == 2


def test_an_event_processed_again_starts_no_second_run(api, key):
    automation_id = automation(api, key, exit_only())
    event(api, key, "order.completed")
    drain()
    trigger = Event.objects.filter(event="order.completed")
    trigger.update(status=WorkStatus.ACCEPTED, next_attempt_at=trigger.get().created_at)
    assert drain()["events"] == 1
    assert Event.objects.get(event="order.completed").status == "processed"
    assert len(runs(api, key, automation_id)) == 1


def test_the_trigger_filter_reads_the_payload_and_the_contact(api, key, world):
    definition = exit_only()
    definition["trigger"]["filter"] = {
        "all": [
            {"path": "payload.total", "op": "gte", "value": 10},
            {"path": "contact.fields.vip", "op": "ne", "value": False},
        ]
    }
    automation_id = automation(api, key, definition)
    Contact.objects.create(project=world.project, email="grace@example.net", fields={"vip": False})
    event(api, key, "order.completed", payload={"total": 9})
    event(api, key, "order.completed", payload={"total": 10})
    event(api, key, "order.completed", payload={"total": "10"})
    event(api, key, "order.completed", email="grace@example.net", payload={"total": 50})
    drain()
    [run] = runs(api, key, automation_id)
    assert run["resolved_identity_value"] == "ada@example.net"


def test_a_system_event_can_start_a_run(api, key):
    automation_id = automation(api, key, exit_only("sendrealm.contact.created"))
    response = api.post("/contacts/upsert", {"email": "new@example.net"}, key=key)
    assert response.status_code in (200, 201), response.json()
    drain()
    [run] = runs(api, key, automation_id)
    assert run["trigger_event_name"] == "sendrealm.contact.created"
    assert run["resolved_identity_type"] == "contact_id"
    assert run["contact_id"] == response.json()["data"]["id"]


def test_a_branch_on_the_wait_outcome_takes_else_after_a_timeout(api, key, clock):
    definition = {
        "trigger": {"event": "signup"},
        "start": "await",
        "steps": [
            {
                "key": "await",
                "type": "wait_for_event",
                "event": "activated",
                "timeout": "PT1H",
                "next": "check",
                "on_timeout": "check",
            },
            {
                "key": "check",
                "type": "branch",
                "condition": {
                    "any": [{"path": "steps.await.outcome", "op": "eq", "value": "event"}]
                },
                "then": "yes",
                "else": "no",
                "next": None,
            },
            {"key": "yes", "type": "update_contact", "fields": {"active": True}, "next": None},
            {"key": "no", "type": "update_contact", "fields": {"active": False}, "next": None},
        ],
    }
    automation_id = automation(api, key, definition)
    event(api, key, "signup")
    event(api, key, "signup", email="grace@example.net")
    drain()
    event(api, key, "activated", email="grace@example.net")
    clock.advance(hours=1)
    drain()
    fields = dict(Contact.objects.values_list("email", "fields"))
    assert fields == {"ada@example.net": {"active": False}, "grace@example.net": {"active": True}}
    outcomes = {
        r["resolved_identity_value"]: steps_of(r)[1][2] for r in runs(api, key, automation_id)
    }
    assert outcomes == {"ada@example.net": "else", "grace@example.net": "then"}


def test_a_plain_wait_resumes_after_its_duration(api, key, clock):
    definition = {
        "trigger": {"event": "signup"},
        "start": "pause",
        "steps": [
            {"key": "pause", "type": "wait", "duration": "PT10M", "next": "mark"},
            {"key": "mark", "type": "update_contact", "fields": {"nudged": 1}, "next": None},
        ],
    }
    automation_id = automation(api, key, definition)
    event(api, key, "signup")
    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "waiting"
    assert run["waits"][0]["event"] is None
    clock.advance(minutes=10)
    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "completed"
    assert run["waits"][0]["status"] == "timed_out"
    assert Contact.objects.get().fields == {"nudged": 1}


def test_a_suppressed_address_completes_the_send_step_without_mail(api, key, smtp):
    suppression = {"email": "ada@example.net", "reason": "manual"}
    assert api.post("/suppressions", suppression, key=key).status_code == 201
    definition = {
        "trigger": {"event": "order.completed"},
        "start": "welcome",
        "steps": [
            {
                "key": "welcome",
                "type": "send_email",
                "template_id": email_template(api, key),
                "next": None,
            }
        ],
    }
    automation_id = automation(api, key, definition)
    event(api, key, "order.completed")
    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "completed"
    assert steps_of(run) == [("welcome", "completed", "suppressed")]
    assert Email.objects.get().status == EmailStatus.SUPPRESSED
    assert smtp.received == []


def test_a_send_whose_template_was_deleted_fails_the_run_with_the_reason(api, key, smtp):
    template_id = email_template(api, key)
    definition = {
        "trigger": {"event": "order.completed"},
        "start": "welcome",
        "steps": [
            {"key": "welcome", "type": "send_email", "template_id": template_id, "next": None}
        ],
    }
    automation_id = automation(api, key, definition)
    assert api.delete(f"/templates/{template_id}", key=key).status_code == 200
    event(api, key, "order.completed")
    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "failed"
    assert run["terminal_reason"] == "failed"
    assert "No such template" in run["last_error"]
    assert run["steps"][0]["status"] == "failed"
    assert "No such template" in run["steps"][0]["error"]
    assert Email.objects.count() == 0


def test_cancel_of_a_resumed_run_stops_it_at_the_next_step(api, key, smtp):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    event(api, key, "order.completed")
    drain()
    event(api, key, "review.submitted", payload={"rating": 5})
    # Process the event only: the run is resumed (running), its job due.
    events_process_batch()
    run_id = one_run(api, key, automation_id)["id"]
    assert one_run(api, key, automation_id)["status"] == "running"

    response = api.post(
        f"/automations/{automation_id}/runs/{run_id}/cancel", {"reason": "enough"}, key=key
    )
    assert response.status_code == 202
    assert response.json()["data"]["status"] == "running"
    assert response.json()["data"]["cancellation_requested_at"] is not None

    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "canceled"
    assert run["terminal_reason"] == "canceled"
    assert run["canceled_at"] is not None
    assert run["cancellation_reason"] == "enough"
    # The wait had matched; the steps after it never ran.
    assert [s["key"] for s in run["steps"]] == ["welcome", "await_review"]
    assert Contact.objects.get().fields == {}


def test_archiving_cancels_waiting_runs_and_their_jobs_do_nothing_later(api, key, smtp, clock):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    event(api, key, "order.completed")
    drain()
    action(api, key, automation_id, "archive")
    run = one_run(api, key, automation_id)
    assert run["status"] == "canceled"
    assert run["terminal_reason"] == "archived"
    assert run["waits"][0]["status"] == "canceled"

    event(api, key, "order.completed")
    clock.advance(days=8)
    drain()
    assert len(runs(api, key, automation_id)) == 1
    assert len(smtp.received) == 1


def test_deleting_the_automation_cancels_its_runs_and_starts_no_more(api, key, smtp):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    event(api, key, "order.completed")
    drain()
    run_id = one_run(api, key, automation_id)["id"]
    assert api.delete(f"/automations/{automation_id}", key=key).status_code == 200
    event(api, key, "order.completed")
    drain()
    assert list(AutomationRun.objects.values_list("id", "status", "terminal_reason")) == [
        (uuid.UUID(run_id), "canceled", "canceled")
    ]


def test_a_paused_automation_starts_nothing_and_holds_runs_until_resumed(api, key, smtp, clock):
    template = email_template(api, key)
    definition = {
        "trigger": {"event": "order.completed"},
        "start": "pause",
        "steps": [
            {"key": "pause", "type": "wait", "duration": "PT1H", "next": "welcome"},
            {"key": "welcome", "type": "send_email", "template_id": template, "next": None},
        ],
    }
    automation_id = automation(api, key, definition)
    event(api, key, "order.completed")
    drain()
    action(api, key, automation_id, "pause")
    event(api, key, "order.completed", email="grace@example.net")
    clock.advance(hours=2)
    drain()

    [run] = runs(api, key, automation_id)
    assert run["status"] == "pending"
    assert steps_of(run) == [("pause", "completed", None)]
    assert smtp.received == []

    action(api, key, automation_id, "resume")
    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "completed"
    assert len(smtp.received) == 1


def test_a_deleted_contact_ends_its_runs(api, key, smtp):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    event(api, key, "order.completed")
    drain()
    contact = Contact.objects.get()
    assert api.delete(f"/contacts/{contact.id}", key=key).status_code == 200
    run = one_run(api, key, automation_id)
    assert run["status"] == "canceled"
    assert run["cancellation_reason"] == "The contact was deleted."


def test_run_counts_follow_the_engine(api, key, smtp):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    event(api, key, "order.completed")
    event(api, key, "order.completed", email="grace@example.net")
    drain()
    event(api, key, "review.submitted", payload={"rating": 1})
    drain()
    counts = api.get(f"/automations/{automation_id}", key=key).json()["data"]["run_counts"]
    assert counts == {
        "pending": 0,
        "running": 0,
        "waiting": 1,
        "completed": 1,
        "failed": 0,
        "canceled": 0,
        "holdout": 0,
    }
