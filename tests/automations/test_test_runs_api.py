"""Test runs through the API: a whole run inside the request on a virtual clock, sends
rendered and never delivered, injected events completing waits before their timeout."""

import pytest

from automations.models import AutomationEntry, AutomationRun, RunJob
from contacts.models import Contact
from messaging.models import Email
from pushproviders.models import PushMessage
from tests.automations.api_driver import (
    automation,
    drain,
    email_template,
    event,
    send_then_await,
    steps_of,
)
from tests.messaging.factories_templates import TemplateVersionFactory

pytestmark = pytest.mark.django_db


def post_test_run(api, key, automation_id, body):
    response = api.post(f"/automations/{automation_id}/test-runs", body, key=key)
    return response


def finished(api, key, automation_id, **body):
    body.setdefault("email", "ada@example.net")
    response = post_test_run(api, key, automation_id, body)
    assert response.status_code == 201, response.json()
    return response.json()["data"]


def test_an_injected_event_before_the_timeout_completes_the_wait(api, key, world):
    Contact.objects.create(
        project=world.project, email="ada@example.net", fields={"first_name": "Ada"}
    )
    automation_id = automation(api, key, send_then_await(email_template(api, key)))

    run = finished(
        api,
        key,
        automation_id,
        payload={"order_id": "A-1"},
        start_at="2026-03-01T09:00:00Z",
        events=[
            {"event": "review.submitted", "payload": {"rating": 5}, "after": "P2D"},
            {"event": "review.submitted", "payload": {"rating": 1}, "after": "P3D"},
        ],
    )

    assert run["execution_mode"] == "test"
    assert run["status"] == "completed"
    assert run["terminal_reason"] == "completed"
    assert run["virtual_now"] == "2026-03-03T09:00:00Z"
    assert run["started_at"] == "2026-03-01T09:00:00Z"
    assert steps_of(run) == [
        ("welcome", "completed", None),
        ("await_review", "completed", "event"),
        ("check", "completed", "then"),
        ("tag_happy", "completed", None),
    ]
    rendered = run["steps"][0]["rendered"]
    assert rendered["subject"] == "Thanks Ada"
    assert rendered["text"] == "Order A-1"
    assert rendered["from"] == "Shop <shop@example.com>"
    assert rendered["to"] == ["ada@example.net"]
    assert run["steps"][0]["email_id"] is None
    assert run["steps"][3]["rendered"] == {"fields": {"happy": True}}
    [wait] = run["waits"]
    assert (wait["status"], wait["timeout_at"]) == ("matched", "2026-03-08T09:00:00Z")
    # Nothing was sent, stored for delivery, or changed.
    assert Email.objects.count() == 0
    assert Contact.objects.get().fields == {"first_name": "Ada"}
    assert RunJob.objects.count() == 0
    assert AutomationEntry.objects.count() == 0


def test_without_an_event_in_time_the_timeout_path_runs_at_the_virtual_deadline(api, key):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    run = finished(
        api,
        key,
        automation_id,
        start_at="2026-03-01T09:00:00Z",
        events=[{"event": "review.submitted", "payload": {"rating": 5}, "after": "P7D"}],
    )
    assert run["terminal_reason"] == "exited"
    assert run["virtual_now"] == "2026-03-08T09:00:00Z"
    assert steps_of(run)[1:] == [
        ("await_review", "completed", "timeout"),
        ("gave_up", "completed", None),
    ]
    assert run["waits"][0]["status"] == "timed_out"


def test_a_test_run_waits_for_nobody_and_real_events_never_match_it(api, key, world):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    finished(api, key, automation_id)
    event(api, key, "review.submitted", payload={"rating": 5})
    event(api, key, "order.completed")
    drain()
    test_runs = AutomationRun.objects.filter(execution_mode="test")
    assert test_runs.get().waits.get().status == "timed_out"
    assert AutomationRun.objects.filter(execution_mode="live").count() == 1


def test_the_draft_is_run_when_nothing_is_published_and_a_version_can_be_named(api, key):
    definition = {
        "trigger": {"event": "signup"},
        "start": "mark",
        "steps": [{"key": "mark", "type": "update_contact", "fields": {"v": 1}, "next": None}],
    }
    automation_id = automation(api, key, definition, publish=False)
    run = finished(api, key, automation_id)
    assert run["steps"][0]["rendered"] == {"fields": {"v": 1}}
    version_id = run["automation_version_id"]
    again = finished(api, key, automation_id, version=version_id)
    assert again["automation_version_id"] == version_id


def test_a_push_step_is_rendered_for_the_contact(api, key, world):
    push = TemplateVersionFactory(
        template__project=world.project, template__channel="push", push=True, published=True
    ).template
    definition = {
        "trigger": {"event": "order.shipped"},
        "start": "notify",
        "steps": [
            {"key": "notify", "type": "send_push", "template_id": str(push.id), "next": None}
        ],
    }
    automation_id = automation(api, key, definition)
    run = finished(api, key, automation_id, payload={"order_id": "Z9"})
    step = run["steps"][0]
    assert step["rendered"]["body"] == "Your order Z9 shipped"
    assert step["rendered"]["installations"] == 0
    assert step["outcome"] == "no_devices"
    assert PushMessage.objects.count() == 0


def test_a_payload_the_trigger_filter_refuses_is_422_and_stores_nothing(api, key):
    definition = {
        "trigger": {
            "event": "order.completed",
            "filter": {"all": [{"path": "payload.total", "op": "gt", "value": 100}]},
        },
        "start": "done",
        "steps": [{"key": "done", "type": "exit", "next": None}],
    }
    automation_id = automation(api, key, definition)
    response = post_test_run(
        api, key, automation_id, {"email": "a@example.net", "payload": {"total": 5}}
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "trigger_not_passed"
    assert AutomationRun.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, ""),
        ({"email": "a@example.net", "contact_id": "8b0c3c5e-2c3a-4c38-9a43-3a3f4c0b8e1f"}, ""),
        ({"contact_id": "8b0c3c5e-2c3a-4c38-9a43-3a3f4c0b8e1f"}, "contact_id"),
        ({"email": "a@example.net", "events": [{"event": "x", "after": "P1M"}]}, "events.0.after"),
        (
            {"email": "a@example.net", "events": [{"event": "Bad Name", "after": "P1D"}]},
            "events.0.event",
        ),
        ({"email": "a@example.net", "version": "8b0c3c5e-2c3a-4c38-9a43-3a3f4c0b8e1f"}, "version"),
        ({"email": "a@example.net", "surprise": 1}, "surprise"),
    ],
)
def test_bad_bodies_are_400_at_their_path(api, key, body, path):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    response = post_test_run(api, key, automation_id, body)
    assert response.status_code == 400, response.json()
    paths = [issue["path"] for issue in response.json()["error"]["issues"]]
    assert path in paths or (path == "" and paths)
    assert AutomationRun.objects.count() == 0


def test_a_loop_through_a_wait_stops_at_the_step_limit(api, key, settings):
    settings.AUTOMATIONS_TEST_RUN_STEP_LIMIT = 10
    definition = {
        "trigger": {"event": "tick"},
        "start": "pause",
        "steps": [{"key": "pause", "type": "wait", "duration": "P1D", "next": "pause"}],
    }
    automation_id = automation(api, key, definition)
    run = finished(api, key, automation_id, start_at="2026-01-01T00:00:00Z")
    assert run["status"] == "failed"
    assert "10 steps" in run["last_error"]
    assert run["virtual_now"] == "2026-01-11T00:00:00Z"


def test_other_projects_and_read_only_keys_cannot_start_test_runs(api, key, world):
    automation_id = automation(api, key, send_then_await(email_template(api, key)))
    body = {"email": "a@example.net"}
    other = api.post(
        f"/automations/{automation_id}/test-runs", body, key=world.keys["other_project"]
    )
    assert other.status_code == 404
    read_only = api.post(
        f"/automations/{automation_id}/test-runs", body, key=world.keys["read_only"]
    )
    assert read_only.status_code == 403
