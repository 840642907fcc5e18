"""Automations over the API: create, read, edit the draft, versions and restore, delete,
and who may do what (docs/API.md, Automations)."""

import uuid

import pytest
from django.db import IntegrityError, transaction

from automations.models import AutomationVersion, AutomationVersionState
from tests.automations.conftest import Automations, error, issues
from tests.automations.factories import (
    AutomationFactory,
    AutomationRunFactory,
    simple_definition,
)

pytestmark = pytest.mark.django_db

AUTOMATION_MEMBERS = {
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
DETAIL_MEMBERS = AUTOMATION_MEMBERS | {
    "current_draft_version",
    "current_published_version",
    "versions",
    "run_counts",
}
VERSION_MEMBERS = {
    "id",
    "automation_id",
    "version_number",
    "state",
    "definition",
    "editor_layout",
    "published_at",
    "restored_from_version_id",
    "created_at",
    "updated_at",
}


def publish(automations, automation_id):
    response = automations.post(automation_id, "/actions/publish", {})
    assert response.status_code == 200, response.json()
    return response.json()["data"]


# Create and read


def test_create_answers_the_automation_with_its_first_draft(automations, definition, clock):
    response = automations.create(
        definition,
        body={"description": "After an order", "editor_layout": {"nodes": {"welcome": [0, 0]}}},
    )

    assert response.status_code == 201
    body = response.json()
    assert body["status"] == 201
    data = body["data"]
    assert set(data) == DETAIL_MEMBERS
    assert data["name"] == "Post-purchase"
    assert data["description"] == "After an order"
    assert data["status"] == "draft"
    assert data["current_published_version_id"] is None
    assert data["current_published_version"] is None
    assert data["deleted_at"] is None
    assert data["created_at"] == "2026-01-01T12:00:00Z"
    draft = data["current_draft_version"]
    assert set(draft) == VERSION_MEMBERS
    assert draft["id"] == data["current_draft_version_id"]
    assert (draft["version_number"], draft["state"]) == (1, "draft")
    assert draft["definition"] == definition
    assert draft["editor_layout"] == {"nodes": {"welcome": [0, 0]}}
    assert draft["automation_id"] == data["id"]
    assert draft["published_at"] is None
    assert data["versions"] == [draft]
    assert data["run_counts"] == {
        "pending": 0,
        "running": 0,
        "waiting": 0,
        "completed": 0,
        "failed": 0,
        "canceled": 0,
        "holdout": 0,
    }


def test_optional_members_are_null_when_not_given(automations):
    data = automations.created(simple_definition())

    assert data["description"] is None
    assert data["current_draft_version"]["editor_layout"] is None
    assert data["current_draft_version"]["restored_from_version_id"] is None


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ({}, ["definition", "name"]),
        ({"name": "", "definition": simple_definition()}, ["name"]),
        ({"name": "x" * 201, "definition": simple_definition()}, ["name"]),
        ({"name": "A", "definition": []}, ["definition"]),
        ({"name": "A", "definition": simple_definition(), "trigger": "x"}, ["trigger"]),
        ({"name": "A", "definition": simple_definition(), "editor_layout": [1]}, ["editor_layout"]),
        ({"name": 5, "definition": "{}"}, ["definition", "name"]),
    ],
)
def test_create_refuses_a_bad_body_and_stores_nothing(automations, body, paths):
    response = automations.api.post("/automations", body, key=automations.key)

    assert error(response) == (400, "validation_error")
    assert sorted(path for path, _ in issues(response)) == paths
    assert not AutomationVersion.objects.exists()


def test_get_answers_the_automation_with_every_version(automations):
    created = automations.created(simple_definition())
    publish(automations, created["id"])
    automations.patch(created["id"], {"definition": simple_definition("order.refunded")})

    response = automations.get(created["id"])

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["status"] == "active"
    assert [(v["version_number"], v["state"]) for v in data["versions"]] == [
        (1, "published"),
        (2, "draft"),
    ]
    assert data["current_published_version"]["version_number"] == 1
    assert data["current_draft_version"]["definition"]["trigger"]["event"] == "order.refunded"


def test_the_list_holds_the_projects_automations_oldest_first(automations, world):
    first = automations.created(simple_definition(), name="First")
    second = automations.created(simple_definition(), name="Second")
    AutomationFactory(project=world.other_project)

    response = automations.api.get("/automations", {"limit": 1}, key=automations.key)

    body = response.json()
    assert body["data"][0]["id"] == first["id"]
    assert set(body["data"][0]) == AUTOMATION_MEMBERS
    assert body["metadata"]["total"] == 2
    page = automations.api.get(
        "/automations", {"limit": 1, "after": body["metadata"]["next"]}, key=automations.key
    )
    assert [a["id"] for a in page.json()["data"]] == [second["id"]]
    assert page.json()["metadata"]["has_more"] is False


def test_another_projects_automation_is_not_found(api, world):
    automation = AutomationFactory(project=world.other_project)
    mine = Automations(api, world.keys["project"])

    assert error(mine.get(automation.id)) == (404, "not_found")
    assert error(mine.get(automation.id, "/versions")) == (404, "not_found")
    assert error(mine.get(automation.id, "/runs")) == (404, "not_found")
    assert error(mine.patch(automation.id, {"name": "Mine"})) == (404, "not_found")
    assert error(mine.delete(automation.id)) == (404, "not_found")
    assert error(mine.post(automation.id, "/actions/pause", {})) == (404, "not_found")


# Edit


def test_patch_renames_without_a_new_version(automations):
    created = automations.created(simple_definition())

    response = automations.patch(created["id"], {"name": "Renamed", "description": None})

    data = response.json()["data"]
    assert response.status_code == 200
    assert data["name"] == "Renamed"
    assert [v["version_number"] for v in data["versions"]] == [1]


def test_patch_edits_the_draft_in_place(automations, clock):
    created = automations.created(simple_definition())
    clock.advance(minutes=1)

    response = automations.patch(
        created["id"],
        {"definition": simple_definition("order.refunded"), "editor_layout": {"zoom": 2}},
    )

    data = response.json()["data"]
    draft = data["current_draft_version"]
    assert draft["id"] == created["current_draft_version_id"]
    assert draft["definition"]["trigger"]["event"] == "order.refunded"
    assert draft["editor_layout"] == {"zoom": 2}
    assert draft["updated_at"] == "2026-01-01T12:01:00Z"
    assert data["updated_at"] == "2026-01-01T12:01:00Z"


def test_patch_after_publishing_starts_a_new_draft_from_the_published_version(automations):
    created = automations.created(simple_definition(), body={"editor_layout": {"zoom": 1}})
    publish(automations, created["id"])

    response = automations.patch(created["id"], {"editor_layout": {"zoom": 3}})

    data = response.json()["data"]
    draft = data["current_draft_version"]
    assert draft["version_number"] == 2
    assert draft["definition"] == simple_definition()
    assert draft["editor_layout"] == {"zoom": 3}
    assert data["current_published_version"]["editor_layout"] == {"zoom": 1}


def test_a_patch_that_changes_nothing_stores_nothing(automations, clock):
    created = automations.created(simple_definition())
    publish(automations, created["id"])
    clock.advance(minutes=1)

    response = automations.patch(
        created["id"], {"name": "Post-purchase", "definition": simple_definition()}
    )

    data = response.json()["data"]
    assert data["current_draft_version"] is None
    assert len(data["versions"]) == 1
    assert data["updated_at"] == created["updated_at"]


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ({}, [""]),
        ({"status": "active"}, ["status"]),
        (
            {"definition": {"trigger": {}}},
            ["definition.start", "definition.steps", "definition.trigger.event"],
        ),
        ({"name": None}, ["name"]),
    ],
)
def test_patch_refuses_a_bad_body(automations, body, paths):
    created = automations.created(simple_definition())

    response = automations.patch(created["id"], body)

    assert error(response) == (400, "validation_error")
    assert sorted(path for path, _ in issues(response)) == paths


def test_an_archived_automation_cannot_be_edited(automations):
    created = automations.created(simple_definition())
    automations.post(created["id"], "/actions/archive", {})

    response = automations.patch(created["id"], {"name": "Again"})

    assert error(response) == (409, "conflict")
    assert automations.get(created["id"]).json()["data"]["name"] == "Post-purchase"


# Versions and restore


def test_versions_are_listed_version_one_first_and_read_one_by_one(automations):
    created = automations.created(simple_definition())
    publish(automations, created["id"])
    automations.patch(created["id"], {"definition": simple_definition("order.refunded")})

    listed = automations.get(created["id"], "/versions")
    versions = listed.json()["data"]
    one = automations.get(created["id"], f"/versions/{versions[1]['id']}")

    assert [(v["version_number"], v["state"]) for v in versions] == [
        (1, "published"),
        (2, "draft"),
    ]
    assert listed.json()["metadata"]["total"] == 2
    assert set(versions[0]) == VERSION_MEMBERS
    assert one.json()["data"] == versions[1]


def test_a_version_of_another_automation_is_not_found(automations):
    first = automations.created(simple_definition())
    second = automations.created(simple_definition())

    response = automations.get(first["id"], f"/versions/{second['current_draft_version_id']}")
    restore = automations.post(
        first["id"], f"/versions/{second['current_draft_version_id']}/restore", {}
    )

    assert error(response) == (404, "not_found")
    assert error(restore) == (404, "not_found")


def test_restore_makes_a_new_draft_that_replaces_the_current_one(automations):
    created = automations.created(simple_definition(), body={"editor_layout": {"zoom": 1}})
    v1 = created["current_draft_version_id"]
    publish(automations, created["id"])
    automations.patch(created["id"], {"definition": simple_definition("order.refunded")})

    response = automations.post(created["id"], f"/versions/{v1}/restore", {})

    assert response.status_code == 201
    draft = response.json()["data"]
    assert set(draft) == VERSION_MEMBERS
    assert (draft["version_number"], draft["state"]) == (3, "draft")
    assert draft["restored_from_version_id"] == v1
    assert draft["definition"] == simple_definition()
    assert draft["editor_layout"] == {"zoom": 1}
    data = automations.get(created["id"]).json()["data"]
    assert data["current_draft_version_id"] == draft["id"]
    assert [(v["version_number"], v["state"], v["published_at"]) for v in data["versions"]][1:] == [
        (2, "superseded", None),
        (3, "draft", None),
    ]


def test_restore_takes_an_empty_body(automations):
    created = automations.created(simple_definition())

    response = automations.post(
        created["id"], f"/versions/{created['current_draft_version_id']}/restore", {"x": 1}
    )

    assert error(response) == (400, "validation_error")
    assert AutomationVersion.objects.count() == 1


# Delete


def test_delete_soft_deletes_and_the_automation_is_gone_everywhere(automations, clock):
    created = automations.created(simple_definition())
    clock.advance(minutes=5)

    response = automations.delete(created["id"])

    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == DETAIL_MEMBERS
    assert data["deleted_at"] == "2026-01-01T12:05:00Z"
    assert error(automations.get(created["id"])) == (404, "not_found")
    assert error(automations.get(created["id"], "/versions")) == (404, "not_found")
    assert error(automations.delete(created["id"])) == (404, "not_found")
    assert error(automations.post(created["id"], "/actions/publish", {})) == (404, "not_found")
    listed = automations.api.get("/automations", key=automations.key).json()
    assert listed["data"] == []
    assert listed["metadata"]["total"] == 0
    assert AutomationVersion.objects.filter(automation_id=created["id"]).count() == 1


def test_deleting_an_automation_cancels_its_runs_in_progress(world, automations):
    automation = AutomationFactory(project=world.project, published=True)
    waiting = AutomationRunFactory(automation=automation, waiting=True)
    running = AutomationRunFactory(automation=automation, running=True)

    automations.delete(automation.id)

    waiting.refresh_from_db()
    running.refresh_from_db()
    assert (waiting.status, waiting.terminal_reason) == ("canceled", "canceled")
    assert waiting.cancellation_reason == "The automation was deleted."
    assert running.status == "running"
    assert running.cancellation_requested_at is not None


# Who may


@pytest.mark.parametrize(
    ("key", "read", "write"),
    [
        ("project", 200, 201),
        ("team", 200, 201),
        ("personal_owner", 200, 201),
        ("personal_member", 200, 201),
        ("personal_viewer", 200, 403),
        ("read_only", 200, 403),
        ("sending", 403, 403),
        ("foreign", 403, 403),
    ],
)
def test_reads_need_resources_read_and_writes_resources_write(api, world, key, read, write):
    personal = key.startswith("personal")
    mine = Automations(api, world.keys[key], world.project.id if personal else None)
    if key == "foreign":
        mine.project = world.project.id

    assert mine.api.get("/automations", key=mine.key, project=mine.project).status_code == read
    assert mine.create(simple_definition()).status_code == write


def test_a_personal_key_must_name_the_project(api, world):
    response = api.get("/automations", key=world.keys["personal_owner"])

    assert error(response) == (400, "project_required")


def test_a_trailing_slash_is_not_found(automations):
    created = automations.created(simple_definition())

    response = automations.api.get(f"/automations/{created['id']}/", key=automations.key)

    assert error(response) == (404, "not_found")


def test_an_unknown_automation_is_not_found(automations):
    assert error(automations.get(uuid.uuid4())) == (404, "not_found")


# The definition schema


def test_the_definition_schema_is_served_to_any_key_without_a_project(api, world):
    response = api.get("/automations/definition-schema", key=world.keys["personal_viewer"])

    assert response.status_code == 200
    schema = response.json()["data"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["trigger", "start", "steps"]
    assert "every loop passes a `wait` or `wait_for_event` step" in schema["description"]


def test_the_definition_schema_needs_a_key(api):
    assert error(api.get("/automations/definition-schema")) == (401, "unauthenticated")


def test_draft_versions_are_at_most_one_per_automation(world):
    """The database refuses a second draft even if a service forgot its lock."""
    automation = AutomationFactory(project=world.project)

    with pytest.raises(IntegrityError), transaction.atomic():
        AutomationVersion.objects.create(
            automation=automation,
            version_number=2,
            state=AutomationVersionState.DRAFT,
            definition=simple_definition(),
        )
