"""An automation's console page shows its per-step funnel: how many live runs of the
published version entered each step, counted by the engine as it writes the steps
(`StepEntryCount`), a loop back once, test runs never; the page reads the counts, not
the runs' timelines."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from automations.models import Automation, AutomationRun, RunStep, StepEntryCount
from automations.selectors import version_step_entries
from automations.services.step_entries import step_entries_count
from tests.automations.api_driver import automation, drain, event

pytestmark = pytest.mark.django_db

DEFINITION = {
    "trigger": {"event": "signup"},
    "start": "check",
    "steps": [
        {
            "key": "check",
            "type": "branch",
            "condition": {"any": [{"path": "payload.plan", "op": "eq", "value": "pro"}]},
            "then": "pro",
            "else": "basic",
            "next": None,
        },
        {"key": "pro", "type": "update_contact", "fields": {"plan": "pro"}, "next": "done"},
        {"key": "basic", "type": "update_contact", "fields": {"plan": "basic"}, "next": "done"},
        {"key": "done", "type": "exit", "next": None},
    ],
}


def page_of(admin_client, automation_id):
    page = admin_client.get(reverse("admin:automations_automation_change", args=[automation_id]))
    assert page.status_code == 200
    return page.content.decode()


def test_the_page_shows_runs_entering_each_step_of_the_published_version(
    admin_client, api, key, clock
):
    automation_id = automation(api, key, DEFINITION)
    for n, plan in enumerate(["pro", "basic", "basic", "basic"]):
        event(api, key, "signup", email=f"c{n}@example.net", payload={"plan": plan})
    drain()
    assert AutomationRun.objects.filter(status="completed").count() == 4

    version = Automation.objects.get(pk=automation_id).current_published_version
    entries = [(step["key"], entered) for step, entered in version_step_entries(version=version)]
    assert entries == [("check", 4), ("pro", 1), ("basic", 3), ("done", 4)]
    content = page_of(admin_client, automation_id)
    assert "Version 1: live runs that entered each step" in content
    assert '<tr class="step" data-step="basic"><th>basic</th><td>update_contact</td><td>3</td>' in (
        content
    )
    assert "<title>pro (update_contact): 1 (25% of check (branch))</title>" in content


def test_test_runs_are_not_counted(admin_client, api, key, world):
    automation_id = automation(api, key, DEFINITION)
    response = api.post(
        f"/automations/{automation_id}/test-runs",
        {"email": "ada@example.net", "payload": {"plan": "pro"}},
        key=key,
    )
    assert response.status_code == 201, response.json()
    assert RunStep.objects.exists()

    assert StepEntryCount.objects.count() == 0
    assert "<td>0</td>" in page_of(admin_client, automation_id)


def test_the_counts_sum_their_shards_in_one_query(admin_client, api, key):
    automation_id = automation(api, key, DEFINITION)
    version = Automation.objects.get(pk=automation_id).current_published_version
    StepEntryCount.objects.create(version=version, step_key="check", shard=63, entered=5)
    step_entries_count({(version.id, "check"): 2, (version.id, "pro"): 1})

    with CaptureQueriesContext(connection) as queries:
        entries = dict(
            (step["key"], entered) for step, entered in version_step_entries(version=version)
        )

    assert entries == {"check": 7, "pro": 1, "basic": 0, "done": 0}
    assert len(queries) == 1
    assert "automations_runstep" not in queries[0]["sql"]


def test_an_automation_without_a_published_version_says_so(admin_client, api, key):
    automation_id = automation(api, key, DEFINITION, publish=False)

    assert "No published version." in page_of(admin_client, automation_id)
