"""Runs over the API: the list with its filters, one run with its timeline and waits,
cancellation, and `run_counts` (docs/API.md, Automations: runs). Runs are made with
factories here; the engine that makes them is tested with it."""

import datetime as dt
import uuid

import pytest

from automations.models import AutomationRun
from tests.automations.conftest import Automations, error, issues
from tests.automations.factories import (
    AutomationFactory,
    AutomationRunFactory,
    RunStepFactory,
    RunWaitFactory,
)
from tests.contacts.factories import ContactFactory
from tests.messaging.factories_emails import EmailFactory

pytestmark = pytest.mark.django_db

RUN_MEMBERS = {
    "id",
    "automation_id",
    "automation_version_id",
    "contact_id",
    "trigger_event_id",
    "trigger_event_name",
    "resolved_identity_type",
    "resolved_identity_value",
    "correlation",
    "execution_mode",
    "status",
    "last_error",
    "started_at",
    "completed_at",
    "virtual_now",
    "terminal_reason",
    "completed_step_key",
    "cancellation_requested_at",
    "cancellation_reason",
    "canceled_at",
    "entered_at",
    "converted_at",
    "conversion_event_id",
    "would_be_held_out",
    "created_at",
    "updated_at",
    "steps",
    "waits",
}


@pytest.fixture
def automation(world):
    return AutomationFactory(project=world.project, published=True)


def runs_of(automations, automation, params=None):
    return automations.api.get(f"/automations/{automation.id}/runs", params, key=automations.key)


def test_a_run_shows_its_timeline_waits_and_linked_sends(automations, automation, world, clock):
    contact = ContactFactory(project=world.project)
    event_id = uuid.uuid4()
    run = AutomationRunFactory(
        automation=automation,
        contact=contact,
        waiting=True,
        trigger_event_id=event_id,
        resolved_identity_type="email",
        resolved_identity_value=contact.email,
        correlation_key="order_id",
        correlation_value="1001",
    )
    email = EmailFactory(project=world.project)
    push_id = uuid.uuid4()
    RunStepFactory(
        run=run,
        step_key="welcome",
        type="send_email",
        status="completed",
        email=email,
        completed_at=clock.current,
    )
    clock.advance(seconds=1)
    RunStepFactory(
        run=run,
        step_key="nudge",
        type="send_push",
        status="failed",
        push_id=push_id,
        error="No installation.",
    )
    clock.advance(seconds=1)
    RunStepFactory(run=run, step_key="await_review", type="wait_for_event")
    RunWaitFactory(
        run=run,
        step_key="await_review",
        event="review.submitted",
        correlation_key="order_id",
        correlation_value="1001",
        timeout_at=dt.datetime(2026, 1, 8, 12, tzinfo=dt.UTC),
    )

    response = automations.get(automation.id, f"/runs/{run.id}")

    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == RUN_MEMBERS
    assert data["automation_id"] == str(automation.id)
    assert data["automation_version_id"] == str(automation.current_published_version_id)
    assert data["contact_id"] == str(contact.id)
    assert data["trigger_event_id"] == str(event_id)
    assert data["trigger_event_name"] == "order.completed"
    assert (data["resolved_identity_type"], data["resolved_identity_value"]) == (
        "email",
        contact.email,
    )
    assert data["correlation"] == {"key": "order_id", "value": "1001"}
    assert (data["execution_mode"], data["status"]) == ("live", "waiting")
    assert data["started_at"] == "2026-01-01T12:00:00Z"
    for member in ("completed_at", "virtual_now", "terminal_reason", "canceled_at", "last_error"):
        assert data[member] is None, member
    assert data["steps"] == [
        {
            "key": "welcome",
            "type": "send_email",
            "status": "completed",
            "started_at": "2026-01-01T12:00:00Z",
            "completed_at": "2026-01-01T12:00:00Z",
            "error": None,
            "email_id": str(email.id),
            "push_id": None,
            "outcome": None,
            "resume_at": None,
            "rendered": None,
        },
        {
            "key": "nudge",
            "type": "send_push",
            "status": "failed",
            "started_at": "2026-01-01T12:00:01Z",
            "completed_at": None,
            "error": "No installation.",
            "email_id": None,
            "push_id": str(push_id),
            "outcome": None,
            "resume_at": None,
            "rendered": None,
        },
        {
            "key": "await_review",
            "type": "wait_for_event",
            "status": "waiting",
            "started_at": "2026-01-01T12:00:02Z",
            "completed_at": None,
            "error": None,
            "email_id": None,
            "push_id": None,
            "outcome": None,
            "resume_at": None,
            "rendered": None,
        },
    ]
    assert data["waits"] == [
        {
            "step_key": "await_review",
            "event": "review.submitted",
            "correlation": {"key": "order_id", "value": "1001"},
            "timeout_at": "2026-01-08T12:00:00Z",
            "status": "waiting",
            "matched_event_id": None,
        }
    ]


def test_a_run_without_correlation_says_null(automations, automation):
    run = AutomationRunFactory(automation=automation, test=True)

    data = automations.get(automation.id, f"/runs/{run.id}").json()["data"]

    assert data["correlation"] is None
    assert data["execution_mode"] == "test"
    assert data["virtual_now"] is not None
    assert (data["steps"], data["waits"]) == ([], [])


def test_the_list_pages_through_runs_oldest_first(automations, automation, clock):
    runs = []
    for _ in range(3):
        runs.append(AutomationRunFactory(automation=automation))
        clock.advance(seconds=1)
    AutomationRunFactory()  # another automation's

    first = runs_of(automations, automation, {"limit": 2}).json()
    second = runs_of(automations, automation, {"limit": 2, "after": first["metadata"]["next"]})

    assert [r["id"] for r in first["data"]] == [str(r.id) for r in runs[:2]]
    assert first["metadata"] == {
        "total": 3,
        "items": 2,
        "limit": 2,
        "after": None,
        "next": first["metadata"]["next"],
        "has_more": True,
    }
    assert [r["id"] for r in second.json()["data"]] == [str(runs[2].id)]
    assert set(first["data"][0]) == RUN_MEMBERS


def test_the_list_filters_by_status_mode_contact_and_time(automations, automation, world, clock):
    contact = ContactFactory(project=world.project)
    old = AutomationRunFactory(automation=automation, completed=True)
    clock.advance(hours=1)
    waiting = AutomationRunFactory(automation=automation, waiting=True, contact=contact)
    test_run = AutomationRunFactory(automation=automation, test=True)

    def ids(params):
        response = runs_of(automations, automation, params)
        assert response.status_code == 200, response.json()
        return {r["id"] for r in response.json()["data"]}

    assert ids({"status": "waiting"}) == {str(waiting.id)}
    assert ids({"status": "completed"}) == {str(old.id)}
    assert ids({"execution_mode": "test"}) == {str(test_run.id)}
    assert ids({"execution_mode": "live"}) == {str(old.id), str(waiting.id)}
    assert ids({"contact_id": str(contact.id)}) == {str(waiting.id)}
    assert ids({"created_after": "2026-01-01T12:30:00Z"}) == {str(waiting.id), str(test_run.id)}
    assert ids({"created_before": "2026-01-01T13:30:00+01:00"}) == {str(old.id)}
    counted = runs_of(automations, automation, {"status": "waiting"}).json()["metadata"]
    assert counted["total"] == 1


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"status": "done"}, "status"),
        ({"execution_mode": "dry"}, "execution_mode"),
        ({"contact_id": "ada"}, "contact_id"),
        ({"created_after": "yesterday"}, "created_after"),
        ({"created_before": "2026-01-01T12:00:00"}, "created_before"),
        ({"limit": "0"}, "limit"),
        ({"after": "tampered"}, "after"),
    ],
)
def test_a_bad_filter_is_400_at_its_name(automations, automation, params, path):
    response = runs_of(automations, automation, params)

    assert error(response) == (400, "validation_error")
    assert [p for p, _ in issues(response)] == [path]


def test_the_list_costs_the_same_queries_for_any_number_of_runs(
    automations, automation, django_assert_max_num_queries
):
    for _ in range(5):
        run = AutomationRunFactory(automation=automation, waiting=True)
        RunStepFactory(run=run)
        RunWaitFactory(run=run)

    # Key and project (cached after the first request), the automation, count, page,
    # steps and waits.
    runs_of(automations, automation)
    with django_assert_max_num_queries(6):
        response = runs_of(automations, automation)

    assert len(response.json()["data"]) == 5


def test_a_run_of_another_automation_is_not_found(automations, automation):
    other = AutomationRunFactory(automation__project=automation.project)

    assert error(automations.get(automation.id, f"/runs/{other.id}")) == (404, "not_found")
    assert error(automations.post(automation.id, f"/runs/{other.id}/cancel", {})) == (
        404,
        "not_found",
    )


def test_runs_of_a_deleted_automation_are_not_found(automations, automation):
    run = AutomationRunFactory(automation=automation, completed=True)
    automations.delete(automation.id)

    assert error(automations.get(automation.id, "/runs")) == (404, "not_found")
    assert error(automations.get(automation.id, f"/runs/{run.id}")) == (404, "not_found")


# Cancel


def test_cancelling_a_waiting_run_ends_it_and_its_waits_at_once(automations, automation, clock):
    run = AutomationRunFactory(automation=automation, waiting=True)
    RunStepFactory(run=run)
    RunWaitFactory(run=run)
    clock.advance(minutes=2)

    response = automations.post(automation.id, f"/runs/{run.id}/cancel", {"reason": "Refunded"})

    assert response.status_code == 202
    body = response.json()
    assert body["status"] == 202
    data = body["data"]
    assert data["status"] == "canceled"
    assert data["terminal_reason"] == "canceled"
    assert data["cancellation_requested_at"] == "2026-01-01T12:02:00Z"
    assert data["canceled_at"] == "2026-01-01T12:02:00Z"
    assert data["completed_at"] == "2026-01-01T12:02:00Z"
    assert data["cancellation_reason"] == "Refunded"
    assert data["waits"][0]["status"] == "canceled"
    assert data["steps"][0]["status"] == "canceled"


def test_cancelling_a_pending_run_ends_it_at_once(automations, automation):
    run = AutomationRunFactory(automation=automation)

    response = automations.post(automation.id, f"/runs/{run.id}/cancel")

    assert response.status_code == 202
    assert response.json()["data"]["status"] == "canceled"
    assert response.json()["data"]["cancellation_reason"] is None


def test_cancelling_a_running_run_asks_the_engine_to_stop(automations, automation, clock):
    run = AutomationRunFactory(automation=automation, running=True)

    first = automations.post(automation.id, f"/runs/{run.id}/cancel", {"reason": "First"})
    clock.advance(minutes=1)
    again = automations.post(automation.id, f"/runs/{run.id}/cancel", {"reason": "Second"})

    assert first.status_code == again.status_code == 202
    data = again.json()["data"]
    assert data["status"] == "running"
    assert data["canceled_at"] is None
    assert data["cancellation_requested_at"] == "2026-01-01T12:00:00Z"
    assert data["cancellation_reason"] == "First"


@pytest.mark.parametrize("status", ["completed", "failed", "canceled"])
def test_cancelling_a_finished_run_is_a_conflict(automations, automation, status):
    run = AutomationRunFactory(automation=automation, status=status)

    response = automations.post(automation.id, f"/runs/{run.id}/cancel", {})

    assert error(response) == (409, "conflict")
    run.refresh_from_db()
    assert run.cancellation_requested_at is None


@pytest.mark.parametrize(
    ("body", "path"),
    [({"reason": 5}, "reason"), ({"reason": "x" * 501}, "reason"), ({"why": "x"}, "why")],
)
def test_cancel_refuses_a_bad_body(automations, automation, body, path):
    run = AutomationRunFactory(automation=automation, waiting=True)

    response = automations.post(automation.id, f"/runs/{run.id}/cancel", body)

    assert error(response) == (400, "validation_error")
    assert [p for p, _ in issues(response)] == [path]
    assert AutomationRun.objects.get(id=run.id).status == "waiting"


@pytest.mark.parametrize(("key", "expected"), [("read_only", 403), ("personal_viewer", 403)])
def test_cancelling_needs_the_automations_scope(api, world, automation, key, expected):
    run = AutomationRunFactory(automation=automation, waiting=True)
    who = Automations(api, world.keys[key], world.project.id)

    response = who.post(automation.id, f"/runs/{run.id}/cancel", {})

    assert error(response) == (expected, "forbidden")


def test_a_personal_key_may_cancel_a_run(api, world, automation):
    run = AutomationRunFactory(automation=automation, waiting=True)
    owner = Automations(api, world.keys["personal_owner"], world.project.id)

    assert owner.post(automation.id, f"/runs/{run.id}/cancel", {}).status_code == 202


def test_reading_runs_needs_resources_read(api, world, automation):
    reader = Automations(api, world.keys["read_only"])
    sender = Automations(api, world.keys["sending"])

    assert reader.get(automation.id, "/runs").status_code == 200
    assert error(sender.get(automation.id, "/runs")) == (403, "forbidden")


# Counts


def test_run_counts_count_live_runs_by_status(automations, automation):
    for status, count in [("pending", 1), ("waiting", 3), ("completed", 2), ("canceled", 1)]:
        for _ in range(count):
            AutomationRunFactory(automation=automation, status=status)
    AutomationRunFactory(automation=automation, status="failed", test=True)
    AutomationRunFactory(automation__project=automation.project, status="failed")

    data = automations.get(automation.id).json()["data"]

    assert data["run_counts"] == {
        "pending": 1,
        "running": 0,
        "waiting": 3,
        "completed": 2,
        "failed": 0,
        "canceled": 1,
        "holdout": 0,
    }
