"""Frequency caps and quiet hours in automation runs, through the API: policies set with
PATCH /project, templates and automations made over HTTP, events sent with POST /events,
the workers run in-process on the controllable clock; mail arrives at a real SMTP server."""

from collections.abc import Iterator
from typing import Any

import pytest

from automations.models import RunJob, RunWait
from config.workqueue.models import WorkStatus
from contacts.models import Contact
from messaging.models import Email
from tests.automations.api_driver import (
    action,
    automation,
    drain,
    email_template,
    event,
    one_run,
    runs,
    steps_of,
)
from tests.messaging.policy_helpers import counted_sends
from tests.messaging.smtp_server import SmtpServer, smtp_server_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


def policies(api: Any, key: str, **values: Any) -> None:
    response = api.patch("/project", {"policies": values}, key=key)
    assert response.status_code == 200, response.json()


def send_then_branch(template_id: str, **send: Any) -> dict[str, Any]:
    """Send an email, then mark the contact when the send was capped."""
    return {
        "trigger": {"event": "order.completed"},
        "start": "welcome",
        "steps": [
            {
                "key": "welcome",
                "type": "send_email",
                "template_id": template_id,
                "next": "check",
                **send,
            },
            {
                "key": "check",
                "type": "branch",
                "condition": {
                    "all": [{"path": "steps.welcome.outcome", "op": "eq", "value": "capped"}]
                },
                "then": "mark",
                "else": None,
                "next": None,
            },
            {"key": "mark", "type": "update_contact", "fields": {"capped": True}, "next": None},
        ],
    }


def test_a_capped_send_is_skipped_with_its_reason_and_the_run_goes_on(api, key, smtp, clock):
    policies(api, key, frequency_caps=[{"channel": "email", "max": 1, "per": "P1D"}])
    automation_id = automation(api, key, send_then_branch(email_template(api, key)))

    event(api, key, "order.completed", payload={"order_id": "A-1"})
    drain()
    clock.advance(hours=23)
    event(api, key, "order.completed", payload={"order_id": "A-2"})
    drain()

    assert len(smtp.received) == 1
    first, second = sorted(runs(api, key, automation_id), key=lambda run: run["created_at"])
    assert steps_of(first) == [("welcome", "completed", None), ("check", "completed", "else")]
    assert steps_of(second) == [
        ("welcome", "completed", "capped"),
        ("check", "completed", "then"),
        ("mark", "completed", None),
    ]
    assert second["status"] == "completed"
    assert second["steps"][0]["email_id"] is None
    assert Contact.objects.get().fields == {"capped": True}

    # The window slides: a day after the first send there is room again.
    clock.advance(hours=1, seconds=1)
    event(api, key, "order.completed", payload={"order_id": "A-3"})
    drain()
    assert len(smtp.received) == 2
    # The contact's row keeps only what a cap can still count: the first send left it.
    assert counted_sends() == 1


def test_caps_count_every_automation_per_contact_and_channel(api, key, smtp, clock):
    policies(
        api,
        key,
        frequency_caps=[
            {"channel": "email", "max": 2, "per": "PT1H"},
            {"channel": "push", "max": 1, "per": "PT1H"},
        ],
    )
    template_id = email_template(api, key)
    automation(api, key, send_then_branch(template_id))
    other = send_then_branch(template_id)
    other["trigger"]["event"] = "cart.abandoned"
    automation(api, key, other)

    event(api, key, "order.completed")
    event(api, key, "cart.abandoned")
    event(api, key, "order.completed")
    event(api, key, "cart.abandoned", email="bob@example.net")
    drain()

    # Ada: two messages within the hour, the third capped; Bob has his own count.
    sent_to = sorted(record.envelope_to[0] for record in smtp.received)
    assert sent_to == ["ada@example.net", "ada@example.net", "bob@example.net"]
    assert Contact.objects.get(email="ada@example.net").fields == {"capped": True}
    assert Contact.objects.get(email="bob@example.net").fields == {}


def test_a_transactional_step_bypasses_caps_and_quiet_hours_and_is_not_counted(
    api, key, smtp, clock
):
    policies(
        api,
        key,
        frequency_caps=[{"channel": "email", "max": 1, "per": "P1D"}],
        quiet_hours={"start": "11:00", "end": "13:00"},
    )
    automation_id = automation(
        api, key, send_then_branch(email_template(api, key), transactional=True)
    )
    for _ in range(3):
        event(api, key, "order.completed")
    drain()

    assert len(smtp.received) == 3
    assert all(
        steps_of(run)[0] == ("welcome", "completed", None) for run in runs(api, key, automation_id)
    )
    assert counted_sends() == 0


def test_a_transactional_flag_must_be_a_boolean(api, key):
    definition = send_then_branch(email_template(api, key), transactional="yes")
    response = api.post("/automations", {"name": "Flow", "definition": definition}, key=key)
    assert response.status_code == 400
    [issue] = response.json()["error"]["issues"]
    assert issue["path"] == "definition.steps.0.transactional"


def test_a_branch_on_a_send_outcome_must_name_a_known_outcome(api, key):
    definition = send_then_branch(email_template(api, key))
    definition["steps"][1]["condition"]["all"][0]["value"] = "timeout"
    response = api.post("/automations", {"name": "Flow", "definition": definition}, key=key)
    assert response.status_code == 400
    [issue] = response.json()["error"]["issues"]
    assert issue["path"] == "definition.steps.1.condition.all.0.value"


def test_a_send_in_quiet_hours_is_deferred_to_their_end_in_the_contacts_zone(
    api, key, smtp, clock, world
):
    # 22:00 to 08:00 in Berlin (UTC+1 in January): the window ends at 07:00 UTC.
    policies(
        api,
        key,
        quiet_hours={"start": "22:00", "end": "08:00"},
        default_timezone="Europe/Berlin",
    )
    automation_id = automation(api, key, send_then_branch(email_template(api, key)))
    clock.advance(hours=10, minutes=30)  # 22:30 UTC, 23:30 in Berlin
    event(api, key, "order.completed", payload={"order_id": "A-1"})
    drain()

    run = one_run(api, key, automation_id)
    assert run["status"] == "waiting"
    assert steps_of(run) == [("welcome", "deferred", None)]
    assert run["steps"][0]["resume_at"] == "2026-01-02T07:00:00Z"
    assert run["waits"][0]["event"] is None
    assert run["waits"][0]["timeout_at"] == "2026-01-02T07:00:00Z"
    assert smtp.received == []
    assert RunJob.objects.get().next_attempt_at.isoformat() == "2026-01-02T07:00:00+00:00"

    clock.advance(hours=8, minutes=29, seconds=59)
    drain()
    assert one_run(api, key, automation_id)["status"] == "waiting"
    assert smtp.received == []

    clock.advance(seconds=1)
    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "completed"
    assert steps_of(run) == [("welcome", "completed", None), ("check", "completed", "else")]
    assert run["steps"][0]["resume_at"] == "2026-01-02T07:00:00Z"
    assert run["steps"][0]["completed_at"] == "2026-01-02T07:00:00Z"
    assert run["steps"][0]["email_id"] == str(Email.objects.get().id)
    assert RunWait.objects.get().status == "timed_out"
    assert len(smtp.received) == 1
    assert RunJob.objects.get().status == WorkStatus.PROCESSED


def test_the_contacts_own_time_zone_wins_over_the_projects(api, key, smtp, clock, world):
    Contact.objects.create(
        project=world.project, email="ada@example.net", fields={"timezone": "America/New_York"}
    )
    policies(
        api,
        key,
        quiet_hours={"start": "06:00", "end": "09:00"},
        default_timezone="Europe/Berlin",
    )
    automation_id = automation(api, key, send_then_branch(email_template(api, key)))
    # 12:00 UTC: 13:00 in Berlin, outside; 07:00 in New York, inside until 09:00 (14:00 UTC).
    event(api, key, "order.completed")
    drain()
    run = one_run(api, key, automation_id)
    assert run["steps"][0]["resume_at"] == "2026-01-01T14:00:00Z"
    assert smtp.received == []


@pytest.mark.parametrize(("per", "outcome"), [("PT30M", None), ("PT2H", "capped")])
def test_a_deferred_send_reads_the_caps_when_it_goes(api, key, smtp, clock, per, outcome):
    policies(
        api,
        key,
        quiet_hours={"start": "12:00", "end": "13:00"},
        frequency_caps=[{"channel": "email", "max": 1, "per": per}],
    )
    automation_id = automation(api, key, send_then_branch(email_template(api, key)))
    clock.advance(minutes=-15)  # 11:45: sent at once, and counted
    event(api, key, "order.completed")
    drain()
    clock.advance(minutes=15)  # 12:00: a full cap, but the send is deferred, not capped
    event(api, key, "order.completed")
    drain()
    second = max(runs(api, key, automation_id), key=lambda run: run["created_at"])
    assert steps_of(second) == [("welcome", "deferred", None)]

    clock.advance(hours=1)
    drain()
    second = max(runs(api, key, automation_id), key=lambda run: run["created_at"])
    # At 13:00 the 30-minute window holds no send (it goes); the 2-hour one holds 11:45.
    assert second["steps"][0]["status"] == "completed"
    assert second["steps"][0]["outcome"] == outcome
    assert len(smtp.received) == (2 if outcome is None else 1)
    # Kept: what the cap can still count at 13:00 (11:45 is outside 30 minutes).
    assert counted_sends() == 1


def test_canceling_a_deferred_run_cancels_its_step_and_sends_nothing(api, key, smtp, clock):
    policies(api, key, quiet_hours={"start": "12:00", "end": "13:00"})
    automation_id = automation(api, key, send_then_branch(email_template(api, key)))
    event(api, key, "order.completed")
    drain()
    run = one_run(api, key, automation_id)
    response = api.post(f"/automations/{automation_id}/runs/{run['id']}/cancel", {}, key=key)
    assert response.status_code == 202, response.json()
    clock.advance(hours=2)
    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "canceled"
    assert steps_of(run) == [("welcome", "canceled", None)]
    assert smtp.received == []


def test_post_emails_bypasses_caps_and_quiet_hours(api, key, smtp, clock):
    policies(
        api,
        key,
        frequency_caps=[{"channel": "email", "max": 1, "per": "P1D"}],
        quiet_hours={"start": "00:00", "end": "23:59"},
    )
    for n in range(2):
        response = api.post(
            "/emails",
            {
                "from": "shop@example.com",
                "to": "ada@example.net",
                "subject": f"Receipt {n}",
                "text": "Thanks",
            },
            key=key,
        )
        assert response.status_code == 201, response.json()
    drain()
    assert len(smtp.received) == 2
    assert counted_sends() == 0


def test_a_test_run_honours_quiet_hours_and_caps_on_its_virtual_clock(api, key, world):
    policies(
        api,
        key,
        quiet_hours={"start": "22:00", "end": "07:30"},
        default_timezone="America/New_York",
        frequency_caps=[{"channel": "email", "max": 1, "per": "PT12H"}],
    )
    template_id = email_template(api, key)
    definition = send_then_branch(template_id)
    definition["steps"][1]["else"] = "later"
    definition["steps"] += [
        {"key": "later", "type": "wait", "duration": "PT6H", "next": "again"},
        {"key": "again", "type": "send_email", "template_id": template_id, "next": None},
    ]
    automation_id = automation(api, key, definition)

    response = api.post(
        f"/automations/{automation_id}/test-runs",
        # 03:00 UTC: 22:00 in New York (EST), the start of the quiet hours.
        {"email": "ada@example.net", "payload": {}, "start_at": "2026-01-10T03:00:00Z"},
        key=key,
    )
    assert response.status_code == 201, response.json()
    run = response.json()["data"]

    assert steps_of(run) == [
        ("welcome", "completed", None),
        ("check", "completed", "else"),
        ("later", "completed", None),
        ("again", "completed", "capped"),
    ]
    welcome = run["steps"][0]
    assert welcome["started_at"] == "2026-01-10T03:00:00Z"
    assert welcome["resume_at"] == "2026-01-10T12:30:00Z"  # 07:30 EST
    assert welcome["completed_at"] == "2026-01-10T12:30:00Z"
    assert welcome["rendered"]["to"] == ["ada@example.net"]
    # Six hours after the first send: within its 12-hour cap.
    assert run["steps"][3]["started_at"] == "2026-01-10T18:30:00Z"
    assert run["steps"][3]["resume_at"] is None
    assert run["steps"][3]["rendered"] is None
    assert run["virtual_now"] == "2026-01-10T18:30:00Z"
    assert Email.objects.count() == 0
    assert counted_sends() == 0


def test_a_paused_automation_holds_a_deferred_send_until_it_is_resumed(api, key, smtp, clock):
    policies(api, key, quiet_hours={"start": "12:00", "end": "13:00"})
    automation_id = automation(api, key, send_then_branch(email_template(api, key)))
    event(api, key, "order.completed")
    drain()
    action(api, key, automation_id, "pause")
    clock.advance(hours=2)
    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "pending"
    assert steps_of(run) == [("welcome", "deferred", None)]
    assert smtp.received == []

    action(api, key, automation_id, "resume")
    drain()
    run = one_run(api, key, automation_id)
    assert run["status"] == "completed"
    assert run["steps"][0]["status"] == "completed"
    assert len(smtp.received) == 1
