"""Conversions under concurrency against PostgreSQL: goal events processed while the
runs they convert take their first steps. Each run converts once, and the report's
counts (kept in the transactions that change the runs) match the runs."""

import pytest

from automations.models import AutomationRun, RunStep
from automations.services.advance import runs_advance_batch
from events.services.processing import events_process_batch
from tests.automations.api_driver import automation, drain, email_template, event
from tests.automations.test_goals import PURCHASE, flow
from tests.contacts.test_contacts_races import run_in_threads

PEOPLE = [f"race{n}@example.net" for n in range(30)]


@pytest.mark.django_db(transaction=True)
def test_goal_events_racing_first_advances_convert_each_run_once(api, key):
    automation_id = automation(api, key, flow(email_template(api, key), goal=PURCHASE))
    for email in PEOPLE:
        event(api, key, "user.signed_up", email=email)
    # The runs are stored (their jobs due), not advanced yet.
    while events_process_batch().claimed:
        pass
    assert AutomationRun.objects.filter(started_at__isnull=True).count() == len(PEOPLE)
    for email in PEOPLE:
        event(api, key, "order.completed", payload={"total": 10}, email=email)

    def work(index: int) -> int:
        step = events_process_batch if index % 2 else runs_advance_batch
        done = 0
        while claimed := step(limit=5).claimed:
            done += claimed
        return done

    run_in_threads(4, work)
    drain()

    runs = AutomationRun.objects.filter(automation_id=automation_id)
    assert runs.filter(converted_at__isnull=False).count() == len(PEOPLE)
    report = api.get(f"/automations/{automation_id}/report", key=key).json()["data"]
    assert (report["entered"], report["converted"]) == (len(PEOPLE), len(PEOPLE))
    entered_steps = {
        key_: RunStep.objects.filter(run__in=runs, step_key=key_, visit=1).count()
        for key_ in ("hello", "pause", "nudge")
    }
    assert entered_steps["hello"] == len(PEOPLE)
    for step in report["steps"]:
        # Every run converted: a step's converted runs are the runs that entered it.
        assert step["entered"] == entered_steps[step["key"]]
        assert step["converted"] == step["entered"]
