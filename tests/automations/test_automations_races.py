"""Concurrent publishes, executes, edits and restores of one automation against
PostgreSQL: real threads, real connections, committed transactions."""

import pytest

from automations.models import AutomationVersion, AutomationVersionState
from tests.automations.conftest import Automations
from tests.automations.factories import simple_definition
from tests.conftest import Api
from tests.contacts.test_contacts_races import run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)


def make(key: str, project=None) -> dict:
    return Automations(Api(), key, project).created(simple_definition())


def assert_consistent(automation_id: str) -> list[AutomationVersion]:
    versions = list(
        AutomationVersion.objects.filter(automation_id=automation_id).order_by("version_number")
    )
    states = [v.state for v in versions]
    assert states.count(AutomationVersionState.DRAFT) <= 1
    assert states.count(AutomationVersionState.PUBLISHED) <= 1
    assert [v.version_number for v in versions] == list(range(1, len(versions) + 1))
    return versions


def test_concurrent_publishes_of_one_draft_publish_it_once(world):
    key = world.keys["project"]
    automation = make(key)

    def publish(_: int) -> int:
        return (
            Api().post(f"/automations/{automation['id']}/actions/publish", {}, key=key).status_code
        )

    statuses = run_in_threads(10, publish)

    assert sorted(statuses) == [200] + [409] * 9
    [version] = assert_consistent(automation["id"])
    assert version.state == AutomationVersionState.PUBLISHED


def test_concurrent_executes_of_two_preparations_publish_once(world):
    key, project = world.keys["personal_owner"], world.project.id
    automation = make(key, project)
    owner = Automations(Api(), key, project)
    prepared = [
        owner.post(automation["id"], "/actions/publish/prepare", {}).json()["data"][
            "prepared_action_id"
        ]
        for _ in range(2)
    ]

    def execute(index: int) -> int:
        return (
            Automations(Api(), key, project)
            .post(
                automation["id"],
                "/actions/publish/execute",
                {"prepared_action_id": prepared[index % 2], "idempotency_key": f"k{index}"},
            )
            .status_code
        )

    statuses = run_in_threads(6, execute)

    assert statuses.count(200) == 1
    assert set(statuses) == {200, 409}
    assert [v.state for v in assert_consistent(automation["id"])] == ["published"]


def test_concurrent_edits_restores_and_publishes_never_make_two_drafts(world):
    key = world.keys["project"]
    automation = make(key)
    aid = automation["id"]
    v1 = automation["current_draft_version_id"]
    Api().post(f"/automations/{aid}/actions/publish", {}, key=key)

    def change(index: int) -> int:
        api = Api()
        if index % 3 == 0:
            response = api.post(f"/automations/{aid}/actions/publish", {}, key=key)
        elif index % 3 == 1:
            response = api.patch(
                f"/automations/{aid}",
                {"definition": simple_definition(f"order.edit_{index}")},
                key=key,
            )
        else:
            response = api.post(f"/automations/{aid}/versions/{v1}/restore", {}, key=key)
        return response.status_code

    statuses = run_in_threads(15, change)

    assert set(statuses[1::3]) == {200}
    assert set(statuses[2::3]) == {201}
    assert set(statuses[0::3]) <= {200, 409}
    versions = assert_consistent(aid)
    published_ever = [v for v in versions if v.published_at is not None]
    assert len(published_ever) == 1 + statuses[0::3].count(200)
