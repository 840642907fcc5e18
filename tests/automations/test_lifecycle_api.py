"""Publish, pause, resume, archive: prepare -> execute for personal keys, the direct action
for integration keys, the transitions each status allows, and the template checks of a
publish (docs/API.md, Automations: lifecycle)."""

import pytest

from automations.apps import MANAGE_SCOPE
from automations.models import Automation, AutomationRun, AutomationVersion, RunWait
from messaging.models import Channel, TemplateVersion, VersionState
from tenancy.models import KeyKind, Role, Scope
from tenancy.preparedactions.models import PreparedAction, PreparedActionStatus
from tenancy.preparedactions.registry import operation_get
from tenancy.services import api_key_create, team_set_rollout
from tests.automations.conftest import Automations, error, issues
from tests.automations.factories import (
    AutomationFactory,
    AutomationRunFactory,
    RunStepFactory,
    RunWaitFactory,
    simple_definition,
)
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(api, world):
    return Automations(api, world.keys["personal_owner"], world.project.id)


def prepare(who, automation_id, action="publish", **kw):
    return who.post(automation_id, f"/actions/{action}/prepare", {}, **kw)


def execute(who, automation_id, prepared_id, key="k1", action="publish", **kw):
    return who.post(
        automation_id,
        f"/actions/{action}/execute",
        {"prepared_action_id": prepared_id, "idempotency_key": key},
        **kw,
    )


def prepared(who, automation_id, action="publish"):
    response = prepare(who, automation_id, action)
    assert response.status_code == 200, response.json()
    return response.json()["data"]["prepared_action_id"]


def status_of(automations, automation_id):
    return automations.get(automation_id).json()["data"]["status"]


# Prepare and execute with a personal key


def test_prepare_publish_describes_the_change(owner, definition, clock):
    created = owner.created(definition)

    response = prepare(owner, created["id"])

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["operation"] == "automations.publish"
    assert data["expires_at"] == "2026-01-01T12:15:00Z"
    assert data["effects"] == {
        "automation_id": created["id"],
        "name": "Post-purchase",
        "action": "publish",
        "status": {"from": "draft", "to": "active"},
        "runs_in_progress": {"pending": 0, "running": 0, "waiting": 0},
        "trigger_event": "order.completed",
        "version": {
            "id": created["current_draft_version_id"],
            "version_number": 1,
            "updated_at": "2026-01-01T12:00:00Z",
        },
        "superseded_version": None,
    }
    assert status_of(owner, created["id"]) == "draft", "preparing changes nothing"


def test_execute_publishes_and_answers_the_automation(owner, definition, clock):
    created = owner.created(definition)
    prepared_id = prepared(owner, created["id"])
    clock.advance(minutes=1)

    response = execute(owner, created["id"], prepared_id)

    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == {
        "id",
        "name",
        "description",
        "status",
        "current_draft_version_id",
        "current_published_version_id",
        "created_at",
        "updated_at",
        "deleted_at",
    }
    assert data["status"] == "active"
    assert data["current_draft_version_id"] is None
    assert data["current_published_version_id"] == created["current_draft_version_id"]
    assert data["updated_at"] == "2026-01-01T12:01:00Z"
    version = AutomationVersion.objects.get(id=created["current_draft_version_id"])
    assert version.state == "published"
    assert version.automation.trigger_event == "order.completed"


def test_the_same_idempotency_key_answers_the_first_result_again(owner, definition, clock):
    created = owner.created(definition)
    prepared_id = prepared(owner, created["id"])
    first = execute(owner, created["id"], prepared_id, key="same")
    clock.advance(minutes=3)

    again = execute(owner, created["id"], prepared_id, key="same")

    assert again.status_code == first.status_code == 200
    assert again.json() == first.json()
    assert AutomationVersion.objects.filter(state="published").count() == 1


def test_another_idempotency_key_after_execution_is_a_conflict(owner, definition):
    created = owner.created(definition)
    prepared_id = prepared(owner, created["id"])
    execute(owner, created["id"], prepared_id, key="first")

    assert error(execute(owner, created["id"], prepared_id, key="second")) == (409, "conflict")


def test_an_expired_preparation_is_refused(owner, definition, clock):
    created = owner.created(definition)
    prepared_id = prepared(owner, created["id"])
    clock.advance(seconds=900)

    response = execute(owner, created["id"], prepared_id)

    assert error(response) == (422, "prepared_action_expired")
    assert status_of(owner, created["id"]) == "draft"


def test_a_preparation_for_another_action_or_automation_is_invalid(owner, definition):
    created = owner.created(definition)
    other = owner.created(definition)
    prepared_id = prepared(owner, created["id"])

    other_automation = execute(owner, other["id"], prepared_id)
    other_action = execute(owner, created["id"], prepared_id, action="archive")

    assert error(other_automation) == (422, "prepared_action_invalid")
    assert error(other_action) == (422, "prepared_action_invalid")


def test_an_edit_between_prepare_and_execute_makes_the_preparation_stale(owner, definition):
    created = owner.created(definition)
    prepared_id = prepared(owner, created["id"])
    owner.patch(created["id"], {"definition": simple_definition("order.refunded")})

    response = execute(owner, created["id"], prepared_id)

    assert error(response) == (409, "conflict")
    assert "prepare it again" in response.json()["error"]["message"]
    assert status_of(owner, created["id"]) == "draft"
    stored = PreparedAction.objects.get(id=prepared_id)
    assert stored.status == PreparedActionStatus.PENDING


def test_a_status_change_between_prepare_and_execute_makes_the_preparation_stale(
    owner, automations, definition
):
    created = owner.created(definition)
    automations.post(created["id"], "/actions/publish", {})
    prepared_id = prepared(owner, created["id"], "archive")
    automations.post(created["id"], "/actions/pause", {})

    response = execute(owner, created["id"], prepared_id, action="archive")

    assert error(response) == (409, "conflict")
    assert status_of(owner, created["id"]) == "paused"


def test_the_spec_resume_flow_answers_the_automation(owner, automations, definition):
    created = owner.created(definition)
    automations.post(created["id"], "/actions/publish", {})
    automations.post(created["id"], "/actions/pause", {})
    prepared_id = prepared(owner, created["id"], "resume")

    response = execute(owner, created["id"], prepared_id, action="resume")

    assert response.status_code == 200
    assert response.json() == {"status": 200, "data": response.json()["data"]}
    assert response.json()["data"]["status"] == "active"


# Who may


@pytest.mark.parametrize("key", ["personal_viewer", "read_only", "sending"])
def test_keys_without_the_automations_scope_are_forbidden(api, world, definition, key):
    created = Automations(api, world.keys["project"]).created(definition)
    who = Automations(api, world.keys[key], world.project.id)

    assert error(prepare(who, created["id"])) == (403, "forbidden")
    assert error(who.post(created["id"], "/actions/publish", {})) == (403, "forbidden")


def test_a_personal_key_without_the_scope_is_forbidden_whatever_its_role(api, world, definition):
    created = Automations(api, world.keys["project"]).created(definition)
    _, key = api_key_create(
        team=world.team,
        kind=KeyKind.PERSONAL,
        name="no lifecycle",
        user=world.users[Role.OWNER],
        scopes=[Scope.RESOURCES_READ, Scope.RESOURCES_WRITE],
        grants={world.project: [Scope.RESOURCES_READ, Scope.RESOURCES_WRITE]},
    )

    response = prepare(Automations(api, key, world.project.id), created["id"])

    assert error(response) == (403, "forbidden")
    assert "automations.manage" in response.json()["error"]["message"]


def test_a_member_may_prepare_and_execute(api, world, definition):
    member = Automations(api, world.keys["personal_member"], world.project.id)
    created = member.created(definition)

    response = execute(member, created["id"], prepared(member, created["id"]))

    assert response.status_code == 200


def test_personal_keys_need_the_rollout_flag(owner, world, definition):
    created = owner.created(definition)
    team_set_rollout(team=world.team, enabled=False)

    assert error(prepare(owner, created["id"])) == (403, "forbidden")


def test_a_personal_key_cannot_call_the_direct_action(owner, definition):
    created = owner.created(definition)

    response = owner.post(created["id"], "/actions/publish", {})

    assert error(response) == (403, "forbidden")
    message = response.json()["error"]["message"]
    assert f"/automations/{created['id']}/actions/publish/prepare" in message
    assert status_of(owner, created["id"]) == "draft"


@pytest.mark.parametrize("key", ["project", "team"])
def test_integration_keys_may_call_the_direct_action(api, world, definition, key):
    who = Automations(api, world.keys[key])
    created = who.created(definition)

    response = who.post(created["id"], "/actions/publish", {})

    assert response.status_code == 200
    assert response.json()["data"]["status"] == "active"


def test_integration_keys_may_also_prepare_and_execute(automations, definition):
    created = automations.created(definition)

    response = execute(automations, created["id"], prepared(automations, created["id"]))

    assert response.status_code == 200


def test_the_direct_action_takes_an_empty_body(automations, definition):
    created = automations.created(definition)

    response = automations.post(created["id"], "/actions/publish", {"force": True})

    assert error(response) == (400, "validation_error")
    assert [path for path, _ in issues(response)] == ["force"]
    assert status_of(automations, created["id"]) == "draft"


def test_an_unknown_action_is_not_a_route(automations, definition):
    created = automations.created(definition)

    assert error(automations.post(created["id"], "/actions/delete", {})) == (404, "not_found")
    assert error(prepare(automations, created["id"], "explode")) == (404, "not_found")


def test_the_operations_are_registered_with_the_manage_scope():
    assert MANAGE_SCOPE == Scope.AUTOMATIONS_MANAGE
    for action in ("publish", "pause", "resume", "archive"):
        operation = operation_get(f"automations.{action}")
        assert operation is not None
        assert operation.scope == Scope.AUTOMATIONS_MANAGE
        assert operation.lifecycle


# Transitions


def test_the_lifecycle_from_draft_to_archived(automations, definition):
    created = automations.created(definition)
    aid = created["id"]

    assert automations.post(aid, "/actions/publish", {}).json()["data"]["status"] == "active"
    assert automations.post(aid, "/actions/pause", {}).json()["data"]["status"] == "paused"
    assert automations.post(aid, "/actions/resume", {}).json()["data"]["status"] == "active"
    assert automations.post(aid, "/actions/archive", {}).json()["data"]["status"] == "archived"


@pytest.mark.parametrize(
    ("setup", "action"),
    [
        ([], "pause"),
        ([], "resume"),
        (["publish"], "resume"),
        (["publish"], "publish"),
        (["publish", "pause"], "pause"),
        (["archive"], "archive"),
        (["archive"], "publish"),
        (["archive"], "resume"),
        (["publish", "archive"], "pause"),
    ],
)
def test_a_transition_the_status_does_not_allow_is_a_conflict(
    automations, owner, definition, setup, action
):
    created = automations.created(definition)
    for step in setup:
        assert automations.post(created["id"], f"/actions/{step}", {}).status_code == 200
    before = automations.get(created["id"]).json()["data"]

    direct = automations.post(created["id"], f"/actions/{action}", {})
    prepared_too = prepare(owner, created["id"], action)

    assert error(direct) == (409, "conflict")
    assert error(prepared_too) == (409, "conflict")
    assert automations.get(created["id"]).json()["data"] == before


def test_publishing_while_paused_keeps_the_automation_paused(automations, definition):
    created = automations.created(definition)
    automations.post(created["id"], "/actions/publish", {})
    automations.post(created["id"], "/actions/pause", {})
    automations.patch(created["id"], {"name": "v2", "editor_layout": {"zoom": 2}})

    response = automations.post(created["id"], "/actions/publish", {})

    data = response.json()["data"]
    assert data["status"] == "paused"
    versions = automations.get(created["id"]).json()["data"]["versions"]
    assert [(v["version_number"], v["state"]) for v in versions] == [
        (1, "superseded"),
        (2, "published"),
    ]
    assert versions[0]["published_at"] is not None


def test_prepare_publish_names_the_version_it_supersedes(owner, automations, world, definition):
    created = automations.created(definition)
    automations.post(created["id"], "/actions/publish", {})
    automations.patch(created["id"], {"definition": simple_definition("order.refunded")})
    AutomationRunFactory(
        automation=Automation.objects.get(id=created["id"]), project=world.project, waiting=True
    )

    effects = prepare(owner, created["id"]).json()["data"]["effects"]

    assert effects["status"] == {"from": "active", "to": "active"}
    assert effects["version"]["version_number"] == 2
    assert effects["superseded_version"]["version_number"] == 1
    assert effects["trigger_event"] == "order.refunded"
    assert effects["runs_in_progress"] == {"pending": 0, "running": 0, "waiting": 1}


# Templates at publish time


@pytest.mark.parametrize(
    ("make", "code"),
    [
        ("unpublished", "not_published"),
        ("wrong_channel", "wrong_channel"),
        ("other_project", "not_found"),
        ("deleted", "not_found"),
        ("unknown", "not_found"),
    ],
)
def test_publish_needs_every_template_published_of_its_channel(
    automations, owner, world, templates, make, code
):
    if make == "unpublished":
        template = TemplateVersionFactory(template__project=world.project).template
    elif make == "wrong_channel":
        template = templates.push
    elif make == "other_project":
        template = TemplateVersionFactory(
            template__project=world.other_project, published=True
        ).template
    elif make == "deleted":
        template = TemplateVersionFactory(
            template=MessageTemplateFactory(project=world.project, deleted=True), published=True
        ).template
    else:
        template = MessageTemplateFactory.build()
    definition = {
        "trigger": {"event": "order.completed"},
        "start": "push",
        "steps": [
            {
                "key": "push",
                "type": "send_push",
                "template_id": str(templates.push.id),
                "next": "mail",
            },
            {"key": "mail", "type": "send_email", "template_id": str(template.id), "next": None},
        ],
    }
    created = automations.created(definition)

    direct = automations.post(created["id"], "/actions/publish", {})
    prepared_too = prepare(owner, created["id"])

    assert error(direct) == (409, "conflict")
    assert issues(direct) == [("definition.steps.1.template_id", code)]
    assert error(prepared_too) == (409, "conflict")
    assert issues(prepared_too) == issues(direct)
    assert status_of(automations, created["id"]) == "draft"


def test_a_template_unpublished_after_prepare_stops_the_execute(owner, world, definition):
    created = owner.created(definition)
    prepared_id = prepared(owner, created["id"])
    # The email template loses its published version (as if it had never been published).
    TemplateVersion.objects.filter(
        template__project=world.project, template__channel=Channel.EMAIL
    ).update(state=VersionState.DRAFT, published_at=None)

    response = execute(owner, created["id"], prepared_id)

    assert error(response) == (409, "conflict")
    assert issues(response) == [("definition.steps.0.template_id", "not_published")]


# Archive and runs


def test_archive_ends_runs_in_progress(automations, world, clock):
    automation = AutomationFactory(project=world.project, published=True)
    waiting = AutomationRunFactory(automation=automation, waiting=True)
    wait = RunWaitFactory(run=waiting)
    step = RunStepFactory(run=waiting)
    pending = AutomationRunFactory(automation=automation)
    running = AutomationRunFactory(automation=automation, running=True)
    done = AutomationRunFactory(automation=automation, completed=True)
    clock.advance(minutes=1)

    response = automations.post(automation.id, "/actions/archive", {})

    assert response.status_code == 200
    for run in (waiting, pending):
        run.refresh_from_db()
        assert (run.status, run.terminal_reason) == ("canceled", "archived")
        assert run.canceled_at == run.completed_at == clock.current
        assert run.cancellation_reason == "The automation was archived."
    wait.refresh_from_db()
    step.refresh_from_db()
    assert (wait.status, wait.resolved_at) == ("canceled", clock.current)
    assert step.status == "canceled"
    running.refresh_from_db()
    assert running.status == "running"
    assert running.cancellation_requested_at == clock.current
    done.refresh_from_db()
    assert (done.status, done.terminal_reason) == ("completed", "completed")


def test_prepare_archive_counts_the_runs_it_will_cancel(owner, world):
    automation = AutomationFactory(project=world.project, published=True)
    AutomationRunFactory(automation=automation, waiting=True)
    AutomationRunFactory(automation=automation, running=True)
    AutomationRunFactory(automation=automation, completed=True)
    AutomationRunFactory(automation=automation, waiting=True, test=True)

    effects = prepare(owner, automation.id, "archive").json()["data"]["effects"]

    assert effects["status"] == {"from": "active", "to": "archived"}
    assert effects["runs_to_cancel"] == 2
    assert effects["runs_in_progress"] == {"pending": 0, "running": 1, "waiting": 1}
    assert AutomationRun.objects.filter(status="canceled").count() == 0
    assert RunWait.objects.count() == 0
