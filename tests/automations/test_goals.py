"""Goals, exit_on_goal and holdouts (CONTRACT section 20), through the API with the
workers' loop run in-process and the service clock moved by the test."""

import datetime as dt
import hashlib

import pytest

from automations.models import AutomationRun, RunWait, WaitStatus
from messaging.models import Email
from tests.automations.api_driver import automation, drain, email_template, event, runs
from tests.automations.conftest import issues

pytestmark = pytest.mark.django_db

START = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


def flow(template_id, *, goal=None, **settings):
    """Signed up: an email, a day's wait, a second email."""
    definition = {
        "trigger": {"event": "user.signed_up"},
        "start": "hello",
        "steps": [
            {"key": "hello", "type": "send_email", "template_id": template_id, "next": "pause"},
            {"key": "pause", "type": "wait", "duration": "P1D", "next": "nudge"},
            {"key": "nudge", "type": "send_email", "template_id": template_id, "next": None},
        ],
        "settings": settings,
    }
    if goal is not None:
        definition["goal"] = goal
    return definition


PURCHASE = {
    "event": "order.completed",
    "filter": {"all": [{"path": "payload.total", "op": "gte", "value": 10}]},
    "within": "P2D",
}


@pytest.fixture
def template(api, key):
    return email_template(api, key)


def the_run(automation_id) -> AutomationRun:
    return AutomationRun.objects.get(automation_id=automation_id)


def test_a_goal_event_accepted_within_the_window_converts_the_run(api, key, clock, template):
    automation_id = automation(api, key, flow(template, goal=PURCHASE))
    clock.set(START)
    event(api, key, "user.signed_up")
    drain()
    clock.advance(hours=47)
    purchase_id = event(api, key, "order.completed", payload={"total": 12})
    accepted = clock.current
    # Processed long after the window closed: the acceptance time decides.
    clock.advance(days=5)
    drain()
    (run,) = runs(api, key, automation_id)
    assert run["converted_at"] == accepted.isoformat().replace("+00:00", "Z")
    assert run["conversion_event_id"] == purchase_id
    assert run["entered_at"] == "2026-01-01T12:00:00Z"
    # Without exit_on_goal the run went on to its end.
    assert run["status"] == "completed"
    assert run["terminal_reason"] == "completed"
    assert Email.objects.count() == 2


def test_a_goal_event_outside_the_window_or_failing_the_filter_does_not_convert(
    api, key, clock, template
):
    automation_id = automation(api, key, flow(template, goal=PURCHASE))
    clock.set(START)
    event(api, key, "user.signed_up")
    drain()
    clock.advance(hours=1)
    event(api, key, "order.completed", payload={"total": 5})  # fails the filter
    event(api, key, "order.completed", payload={"total": 50}, email="bob@example.net")
    clock.set(START + dt.timedelta(days=2))  # the window excludes its end
    event(api, key, "order.completed", payload={"total": 50})
    drain()
    run = the_run(automation_id)
    assert run.converted_at is None
    assert run.conversion_event_id is None


def test_exit_on_goal_ends_a_waiting_run_at_once(api, key, clock, template):
    automation_id = automation(api, key, flow(template, goal=PURCHASE, exit_on_goal=True))
    clock.set(START)
    event(api, key, "user.signed_up")
    drain()
    assert the_run(automation_id).status == "waiting"
    clock.advance(hours=2)
    purchase_id = event(api, key, "order.completed", payload={"total": 10})
    drain()
    (run,) = runs(api, key, automation_id)
    assert run["status"] == "completed"
    assert run["terminal_reason"] == "converted"
    assert run["conversion_event_id"] == purchase_id
    assert run["completed_at"] == "2026-01-01T14:00:00Z"
    assert [(s["key"], s["status"]) for s in run["steps"]] == [
        ("hello", "completed"),
        ("pause", "canceled"),
    ]
    assert RunWait.objects.get().status == WaitStatus.CANCELED
    # The wait's deadline passes: nothing more is sent.
    clock.advance(days=2)
    drain()
    assert Email.objects.count() == 1


def test_a_goal_event_processed_before_the_run_was_stored_still_converts_it(
    api, key, clock, template
):
    """Both events in one processing batch: the purchase is processed before the run its
    sign-up starts is stored, and the run's first advance finds it."""
    automation_id = automation(api, key, flow(template, goal=PURCHASE, exit_on_goal=True))
    clock.set(START)
    event(api, key, "user.signed_up")
    clock.advance(seconds=1)
    purchase_id = event(api, key, "order.completed", payload={"total": 10})
    drain()
    run = the_run(automation_id)
    assert str(run.conversion_event_id) == purchase_id
    assert run.converted_at == START + dt.timedelta(seconds=1)
    assert run.terminal_reason == "converted"
    # Ended before its first step: nothing was sent.
    assert Email.objects.count() == 0


def test_a_goal_event_accepted_before_the_trigger_does_not_count(api, key, clock, template):
    automation_id = automation(api, key, flow(template, goal=PURCHASE))
    clock.set(START)
    event(api, key, "order.completed", payload={"total": 10})
    clock.advance(seconds=1)
    event(api, key, "user.signed_up")
    drain()
    assert the_run(automation_id).converted_at is None


def test_a_run_converts_once_whatever_the_number_of_goal_events(api, key, clock, template):
    automation_id = automation(api, key, flow(template, goal=PURCHASE))
    clock.set(START)
    event(api, key, "user.signed_up")
    drain()
    clock.advance(minutes=1)
    first = event(api, key, "order.completed", payload={"total": 10})
    drain()
    clock.advance(minutes=1)
    event(api, key, "order.completed", payload={"total": 10})
    drain()
    run = the_run(automation_id)
    assert str(run.conversion_event_id) == first
    report = api.get(f"/automations/{automation_id}/report", key=key).json()["data"]
    assert (report["entered"], report["converted"]) == (1, 1)


def held_out(automation_id, contact_id, percent) -> bool:
    """The contract's rule, worked out here: a hash of both ids in 10,000 buckets."""
    digest = hashlib.sha256(f"{automation_id}:{contact_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10_000 < percent * 100


def test_holdout_runs_send_nothing_and_their_conversions_count(api, key, clock, template):
    automation_id = automation(api, key, flow(template, goal=PURCHASE, holdout_percent=50))
    clock.set(START)
    people = [f"p{n}@example.net" for n in range(16)]
    for email in people:
        event(api, key, "user.signed_up", email=email)
    drain()
    clock.advance(hours=1)
    for email in people[:8]:
        event(api, key, "order.completed", payload={"total": 10}, email=email)
    clock.advance(days=2)
    drain()
    found = runs(api, key, automation_id)
    assert len(found) == 16
    expected = {run["contact_id"]: held_out(automation_id, run["contact_id"], 50) for run in found}
    # Both groups are there (16 contacts at 50 %: a split this lopsided would be a bug).
    assert 0 < sum(expected.values()) < 16
    for run in found:
        assert (run["status"] == "holdout") == expected[run["contact_id"]]
        if run["status"] == "holdout":
            assert run["steps"] == []
            assert run["completed_at"] is not None
    treated = [run for run in found if run["status"] != "holdout"]
    # Two emails per treated run, none for the held out.
    assert Email.objects.count() == 2 * len(treated)
    converted = {run["contact_id"] for run in found if run["converted_at"] is not None}
    bought = set(
        AutomationRun.objects.filter(contact__email__in=people[:8]).values_list(
            "contact_id", flat=True
        )
    )
    assert converted == {str(each) for each in bought}


def test_a_contact_is_held_out_of_an_automation_always_or_never(api, key, clock, template):
    automation_id = automation(api, key, flow(template, holdout_percent=50))
    clock.set(START)
    people = [f"q{n}@example.net" for n in range(6)]
    for _ in range(3):
        for email in people:
            event(api, key, "user.signed_up", email=email)
        clock.advance(minutes=1)
    drain()
    statuses: dict[str, set[bool]] = {}
    for run in runs(api, key, automation_id):
        statuses.setdefault(run["contact_id"], set()).add(run["status"] == "holdout")
    assert len(statuses) == 6
    assert all(len(each) == 1 for each in statuses.values())


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"settings": {"holdout_percent": 51}},
            [("definition.settings.holdout_percent", "invalid_value")],
        ),
        (
            {"settings": {"exit_on_goal": True}},
            [("definition.settings.exit_on_goal", "goal_required")],
        ),
        (
            {"goal": {"event": "order.completed", "within": "P1M"}},
            [("definition.goal.within", "invalid_duration")],
        ),
        ({"goal": {"event": "order.completed"}}, [("definition.goal.within", "required")]),
        (
            {
                "goal": {
                    "event": "order.completed",
                    "within": "P1D",
                    "filter": {"all": [{"path": "steps.a.outcome", "op": "eq", "value": 1}]},
                }
            },
            [("definition.goal.filter.all.0.path", "invalid_path")],
        ),
    ],
)
def test_bad_goals_and_settings_are_refused_with_their_paths(api, key, template, change, expected):
    definition = {**flow(template), **change}
    response = api.post("/automations", {"name": "Flow", "definition": definition}, key=key)
    assert response.status_code == 400, response.json()
    assert issues(response) == expected
    assert not AutomationRun.objects.exists()


def test_exit_on_goal_ends_a_run_waiting_for_an_event(api, key, clock, template):
    definition = flow(template, goal=PURCHASE, exit_on_goal=True)
    definition["steps"][1] = {
        "key": "pause",
        "type": "wait_for_event",
        "event": "review.submitted",
        "timeout": "P3D",
        "next": "nudge",
        "on_timeout": None,
    }
    automation_id = automation(api, key, definition)
    clock.set(START)
    event(api, key, "user.signed_up")
    drain()
    clock.advance(hours=5)
    event(api, key, "order.completed", payload={"total": 99})
    drain()
    # The awaited event comes after: the run is over, it matches nothing.
    event(api, key, "review.submitted")
    drain()
    (run,) = runs(api, key, automation_id)
    assert (run["status"], run["terminal_reason"]) == ("completed", "converted")
    assert [(w["status"], w["matched_event_id"]) for w in run["waits"]] == [("canceled", None)]
    assert Email.objects.count() == 1
