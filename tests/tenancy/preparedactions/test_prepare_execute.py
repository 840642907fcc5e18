"""Prepare -> execute through the generic action views (docs/API.md, Foundation:
prepared actions).

A real test operation is registered: `tests.bump` adds one to a project's
`event_retention_days` with an F() update, so every effect can be counted in the
database. It is routed like any family's actions, under `/projects/{id}/actions/...`.
"""

import threading
import time
import uuid

import pytest
from django.db import connection
from django.db.models import F
from django.urls import path

import config.urls
from config.api.errors import NotFound
from config.runtime import clock
from tenancy.models import KeyKind, Project, Role, Scope
from tenancy.preparedactions.api.views import ExecuteActionView, PrepareActionView
from tenancy.preparedactions.models import PreparedAction, PreparedActionStatus
from tenancy.preparedactions.registry import Operation, register, unregister
from tenancy.preparedactions.services import prepared_actions_expire
from tenancy.preparedactions.tasks import expire_prepared_actions
from tenancy.services import api_key_create, team_set_rollout
from tests.conftest import Api

urlpatterns = [
    path(
        "projects/<uuid:id>/actions/<str:action>/prepare",
        PrepareActionView.as_view(family="tests"),
    ),
    path(
        "projects/<uuid:id>/actions/<str:action>/execute",
        ExecuteActionView.as_view(family="tests"),
    ),
    *config.urls.urlpatterns,
]

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

# Lets the concurrency test hold the row lock long enough for every thread to queue on it.
EXECUTE_DELAY = {"seconds": 0.0}


def _target(project, resource_id):
    """The project named by the resource id, if it is in the acting project's team."""
    target = Project.objects.filter(id=resource_id, team_id=project.team_id).first()
    if target is None:
        raise NotFound()
    return target


def bump_effects(*, project, resource_id, access):
    target = _target(project, resource_id)
    return {
        "project_id": target.id,
        "event_retention_days": {
            "from": target.event_retention_days,
            "to": target.event_retention_days + 1,
        },
    }


def bump_execute(*, project, resource_id, access, prepared):
    time.sleep(EXECUTE_DELAY["seconds"])
    Project.objects.filter(id=resource_id).update(
        event_retention_days=F("event_retention_days") + 1
    )
    target = Project.objects.get(id=resource_id)
    return 202, {"id": target.id, "days": target.event_retention_days, "at": clock.now()}


def touch_execute(*, project, resource_id, access, prepared):
    return 200, {"touched": resource_id}


@pytest.fixture(autouse=True)
def operations():
    register(
        Operation(
            name="tests.bump",
            scope=Scope.AUTOMATIONS_MANAGE,
            effects=bump_effects,
            execute=bump_execute,
        )
    )
    register(
        Operation(
            name="tests.touch",
            scope=Scope.RESOURCES_WRITE,
            effects=bump_effects,
            execute=touch_execute,
            lifecycle=False,
        )
    )
    yield
    unregister("tests.bump")
    unregister("tests.touch")


def days(project):
    return Project.objects.values_list("event_retention_days", flat=True).get(id=project.id)


class Actions:
    """Prepare and execute as one persona, acting in one project."""

    def __init__(self, api, key, project=None):
        self.api, self.key, self.project = api, key, project

    def prepare(self, resource, action="bump", body=None, **kw):
        return self.api.post(
            f"/projects/{resource.id}/actions/{action}/prepare",
            {} if body is None else body,
            key=kw.get("key", self.key),
            project=kw.get("project", self.project),
        )

    def execute(self, resource, prepared_action_id, idempotency_key, action="bump", **kw):
        return self.api.post(
            f"/projects/{resource.id}/actions/{action}/execute",
            {"prepared_action_id": str(prepared_action_id), "idempotency_key": idempotency_key},
            key=kw.get("key", self.key),
            project=kw.get("project", self.project),
        )

    def prepared(self, resource, action="bump"):
        response = self.prepare(resource, action)
        assert response.status_code == 200, response.json()
        return response.json()["data"]["prepared_action_id"]


@pytest.fixture
def owner(api, world):
    return Actions(api, world.keys["personal_owner"], world.project.id)


def error_code(response):
    return response.status_code, response.json()["error"]["code"]


# Prepare


def test_prepare_describes_the_operation_and_when_it_expires(owner, world, clock):
    response = owner.prepare(world.project)

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == 200
    assert body["data"] == {
        "prepared_action_id": body["data"]["prepared_action_id"],
        "operation": "tests.bump",
        "expires_at": "2026-01-01T12:15:00Z",
        "effects": {
            "project_id": str(world.project.id),
            "event_retention_days": {"from": 90, "to": 91},
        },
    }
    stored = PreparedAction.objects.get(id=body["data"]["prepared_action_id"])
    assert stored.status == PreparedActionStatus.PENDING
    assert stored.user_id == world.users[Role.OWNER].id
    assert days(world.project) == 90, "preparing changes nothing"


def test_prepare_lives_as_long_as_the_projects_policy_says(owner, world, clock):
    owner.api.patch(
        "/project", {"policies": {"prepared_action_ttl_seconds": 60}}, key=world.keys["project"]
    )

    response = owner.prepare(world.project)

    assert response.json()["data"]["expires_at"] == "2026-01-01T12:01:00Z"


@pytest.mark.parametrize(
    ("body", "paths"),
    [({"confirm": True}, ["confirm"]), ({"a": 1, "b": 2}, ["a", "b"]), ([], [""])],
)
def test_prepare_takes_an_empty_object_only(owner, world, body, paths):
    response = owner.prepare(world.project, body=body)

    assert error_code(response) == (400, "validation_error")
    assert sorted(i["path"] for i in response.json()["error"]["issues"]) == paths
    assert not PreparedAction.objects.exists()


def test_prepare_of_an_unknown_action_is_404(owner, world):
    response = owner.prepare(world.project, action="explode")

    assert error_code(response) == (404, "not_found")


def test_prepare_of_a_resource_outside_the_team_is_404(owner, world):
    response = owner.prepare(world.foreign_project)

    assert error_code(response) == (404, "not_found")


# Execute


def test_execute_runs_the_operation_once_and_answers_its_result(owner, world, clock):
    prepared_id = owner.prepared(world.project)

    response = owner.execute(world.project, prepared_id, "first")

    assert response.status_code == 202
    assert response.json() == {
        "status": 202,
        "data": {"id": str(world.project.id), "days": 91, "at": "2026-01-01T12:00:00Z"},
    }
    assert days(world.project) == 91
    stored = PreparedAction.objects.get(id=prepared_id)
    assert (stored.status, stored.idempotency_key) == (PreparedActionStatus.EXECUTED, "first")


def test_execute_again_with_the_same_key_replays_the_first_result(owner, world, clock):
    prepared_id = owner.prepared(world.project)
    first = owner.execute(world.project, prepared_id, "same")
    clock.advance(seconds=5)

    again = owner.execute(world.project, prepared_id, "same")

    assert again.status_code == first.status_code == 202
    assert again.json() == first.json()
    assert days(world.project) == 91


def test_the_replay_outlives_the_preparations_expiry(owner, world, clock):
    prepared_id = owner.prepared(world.project)
    first = owner.execute(world.project, prepared_id, "same")
    clock.advance(hours=2)
    expire_prepared_actions()

    again = owner.execute(world.project, prepared_id, "same")

    assert again.json() == first.json()


def test_execute_with_another_key_after_execution_is_a_conflict(owner, world):
    prepared_id = owner.prepared(world.project)
    owner.execute(world.project, prepared_id, "first")

    response = owner.execute(world.project, prepared_id, "second")

    assert error_code(response) == (409, "conflict")
    assert days(world.project) == 91


def test_execute_after_the_deadline_is_expired(owner, world, clock):
    prepared_id = owner.prepared(world.project)
    clock.advance(seconds=900)

    response = owner.execute(world.project, prepared_id, "late")

    assert error_code(response) == (422, "prepared_action_expired")
    assert days(world.project) == 90


def test_execute_just_before_the_deadline_works(owner, world, clock):
    prepared_id = owner.prepared(world.project)
    clock.advance(seconds=899)

    assert owner.execute(world.project, prepared_id, "in time").status_code == 202


@pytest.mark.parametrize(
    "mismatch",
    ["unknown_id", "other_operation", "other_resource", "other_project", "other_user"],
)
def test_execute_of_a_preparation_made_for_something_else_is_invalid(api, owner, world, mismatch):
    prepared_id = owner.prepared(world.project)
    resource, action, extra = world.project, "bump", {}
    if mismatch == "unknown_id":
        prepared_id = uuid.uuid4()
    elif mismatch == "other_operation":
        action = "touch"
    elif mismatch == "other_resource":
        resource = world.other_project
    elif mismatch == "other_project":
        extra = {"project": world.other_project.id}
    elif mismatch == "other_user":
        extra = {"key": world.keys["personal_admin"]}

    response = owner.execute(resource, prepared_id, "k", action=action, **extra)

    assert error_code(response) == (422, "prepared_action_invalid")
    assert days(world.project) == 90
    assert days(world.other_project) == 90


def test_another_personal_key_of_the_same_user_may_execute(owner, world):
    _, second_key = api_key_create(
        team=world.team,
        kind=KeyKind.PERSONAL,
        name="laptop",
        user=world.users[Role.OWNER],
        scopes=[Scope.AUTOMATIONS_MANAGE],
        grants={world.project: [Scope.AUTOMATIONS_MANAGE]},
    )
    prepared_id = owner.prepared(world.project)

    response = owner.execute(world.project, prepared_id, "k", key=second_key)

    assert response.status_code == 202


def test_a_preparation_of_an_integration_key_belongs_to_that_key(api, world):
    by_project_key = Actions(api, world.keys["project"])
    prepared_id = by_project_key.prepared(world.project)

    other_key = by_project_key.execute(world.project, prepared_id, "k", key=world.keys["team"])
    same_key = by_project_key.execute(world.project, prepared_id, "k")

    assert error_code(other_key) == (422, "prepared_action_invalid")
    assert same_key.status_code == 202


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"prepared_action_id": "nope", "idempotency_key": ""},
        {"prepared_action_id": None, "idempotency_key": "k" * 256},
    ],
)
def test_execute_needs_an_id_and_an_idempotency_key(owner, world, bad):
    response = owner.api.post(
        f"/projects/{world.project.id}/actions/bump/execute",
        bad,
        key=owner.key,
        project=owner.project,
    )

    assert error_code(response) == (400, "validation_error")
    paths = sorted(i["path"] for i in response.json()["error"]["issues"])
    assert paths == ["idempotency_key", "prepared_action_id"]


def test_execute_rejects_members_it_does_not_define(owner, world):
    prepared_id = owner.prepared(world.project)

    response = owner.api.post(
        f"/projects/{world.project.id}/actions/bump/execute",
        {"prepared_action_id": prepared_id, "idempotency_key": "k", "force": True},
        key=owner.key,
        project=owner.project,
    )

    assert error_code(response) == (400, "validation_error")
    assert [i["path"] for i in response.json()["error"]["issues"]] == ["force"]
    assert days(world.project) == 90


# Who may


def test_personal_keys_need_the_teams_rollout_flag_for_lifecycle_actions(owner, world):
    prepared_id = owner.prepared(world.project)
    team_set_rollout(team=world.team, enabled=False)

    prepare = owner.prepare(world.project)
    execute = owner.execute(world.project, prepared_id, "k")
    not_lifecycle = owner.prepare(world.project, action="touch")

    assert error_code(prepare) == (403, "forbidden")
    assert error_code(execute) == (403, "forbidden")
    assert not_lifecycle.status_code == 200
    assert days(world.project) == 90


def test_integration_keys_do_not_depend_on_the_rollout_flag(api, world):
    team_set_rollout(team=world.team, enabled=False)

    response = Actions(api, world.keys["project"]).prepare(world.project)

    assert response.status_code == 200


@pytest.mark.parametrize("key", ["personal_viewer", "read_only", "sending"])
def test_a_key_without_the_operations_scope_is_forbidden(api, world, key):
    response = Actions(api, world.keys[key], world.project.id).prepare(world.project)

    assert error_code(response) == (403, "forbidden")


def test_a_personal_key_must_name_the_project(owner, world):
    response = owner.prepare(world.project, project=None)

    assert error_code(response) == (400, "project_required")


# Expiry sweep


def test_the_expiry_task_marks_pending_preparations_past_their_deadline(owner, world, clock):
    executed = owner.prepared(world.project)
    owner.execute(world.project, executed, "k")
    old = owner.prepared(world.project)
    clock.advance(seconds=600)
    fresh = owner.prepared(world.project)
    clock.advance(seconds=301)

    assert expire_prepared_actions() == 1
    assert expire_prepared_actions() == 0, "the sweep is idempotent"

    status = dict(PreparedAction.objects.values_list("id", "status"))
    assert status[uuid.UUID(old)] == PreparedActionStatus.EXPIRED
    assert status[uuid.UUID(fresh)] == PreparedActionStatus.PENDING
    assert status[uuid.UUID(executed)] == PreparedActionStatus.EXECUTED
    response = owner.execute(world.project, old, "k2")
    assert error_code(response) == (422, "prepared_action_expired")


def test_the_expiry_sweep_is_bounded_per_run(owner, world, clock):
    for _ in range(3):
        owner.prepared(world.project)
    clock.advance(hours=1)

    assert prepared_actions_expire(limit=2) == 2
    assert prepared_actions_expire(limit=2) == 1


# Concurrency


@pytest.mark.django_db(transaction=True)
def test_concurrent_executes_of_one_preparation_have_exactly_one_effect(world):
    key, project_id = world.keys["personal_owner"], world.project.id
    prepared_id = Actions(Api(), key, project_id).prepared(world.project)
    threads_count = 20
    barrier = threading.Barrier(threads_count)
    answers: list[tuple[str, int, dict]] = []
    lock = threading.Lock()

    def run(index):
        # Four idempotency keys: the winner's group replays its result, the rest conflict.
        idempotency_key = f"key-{index % 4}"
        try:
            mine = Actions(Api(), key, project_id)
            barrier.wait(timeout=10)
            response = mine.execute(world.project, prepared_id, idempotency_key)
            with lock:
                answers.append((idempotency_key, response.status_code, response.json()))
        finally:
            connection.close()

    EXECUTE_DELAY["seconds"] = 0.05
    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(threads_count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        EXECUTE_DELAY["seconds"] = 0.0

    assert len(answers) == threads_count
    assert days(world.project) == 91, "exactly one effect"
    winner_key = PreparedAction.objects.get(id=prepared_id).idempotency_key
    winners = [(status, body) for k, status, body in answers if k == winner_key]
    losers = [(status, body) for k, status, body in answers if k != winner_key]
    assert len(winners) == 5
    assert all(answer == (202, winners[0][1]) for answer in winners)
    assert winners[0][1]["data"]["days"] == 91
    assert len(losers) == 15
    assert all(status == 409 and b["error"]["code"] == "conflict" for status, b in losers)
