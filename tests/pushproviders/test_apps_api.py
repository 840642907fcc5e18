"""Push apps over HTTP: `GET|POST /push/apps`, `GET|PATCH|DELETE /push/apps/{id}`."""

import uuid

import pytest

from pushproviders.models import PushApp, PushProvider
from tests.pushproviders.factories import (
    PushAppFactory,
    PushInstallationFactory,
    PushProviderFactory,
)

pytestmark = pytest.mark.django_db


def test_creating_an_app_answers_201_with_a_uuid_and_a_public_id(api, world):
    response = api.post("/push/apps", {"name": "Shop"}, key=world.keys["project"])

    assert response.status_code == 201
    data = response.json()["data"]
    assert set(data) == {"id", "public_id", "name", "created_at", "updated_at"}
    uuid.UUID(data["id"])
    assert data["public_id"].startswith("app_")
    assert data["name"] == "Shop"
    assert PushApp.objects.get(id=data["id"]).project == world.project


def test_an_app_is_found_by_its_uuid_and_by_its_public_id(api, world):
    app = PushAppFactory(project=world.project)

    by_uuid = api.get(f"/push/apps/{app.id}", key=world.keys["read_only"])
    by_public_id = api.get(f"/push/apps/{app.public_id}", key=world.keys["read_only"])

    assert by_uuid.status_code == by_public_id.status_code == 200
    assert by_uuid.json()["data"] == by_public_id.json()["data"]


def test_listing_apps_pages_through_the_projects_apps_only(api, world):
    mine = [PushAppFactory(project=world.project) for _ in range(3)]
    PushAppFactory(project=world.other_project)

    response = api.get("/push/apps", {"limit": 2}, key=world.keys["project"])

    body = response.json()
    assert [a["id"] for a in body["data"]] == [str(a.id) for a in mine[:2]]
    assert body["metadata"]["total"] == 3
    assert body["metadata"]["has_more"] is True


def test_renaming_an_app_keeps_its_ids(api, world):
    app = PushAppFactory(project=world.project)

    response = api.patch(f"/push/apps/{app.id}", {"name": "New"}, key=world.keys["project"])

    assert response.status_code == 200
    assert response.json()["data"]["name"] == "New"
    assert response.json()["data"]["public_id"] == app.public_id


def test_deleting_an_app_answers_it_and_removes_its_providers_and_installations(api, world):
    app = PushAppFactory(project=world.project)
    PushProviderFactory(app=app)
    PushInstallationFactory(app=app)

    response = api.delete(f"/push/apps/{app.public_id}", key=world.keys["project"])

    assert response.status_code == 200
    assert response.json()["data"]["id"] == str(app.id)
    assert not PushApp.objects.filter(id=app.id).exists()
    assert not PushProvider.objects.filter(app_id=app.id).exists()


def test_an_app_of_another_project_is_404(api, world):
    app = PushAppFactory(project=world.other_project)

    for response in (
        api.get(f"/push/apps/{app.id}", key=world.keys["project"]),
        api.get(f"/push/apps/{app.public_id}", key=world.keys["project"]),
        api.patch(f"/push/apps/{app.id}", {"name": "x"}, key=world.keys["project"]),
        api.delete(f"/push/apps/{app.id}", key=world.keys["project"]),
    ):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    assert PushApp.objects.get(id=app.id).name == app.name


@pytest.mark.parametrize("persona", ["read_only", "sending", "personal_viewer"])
def test_keys_that_may_not_write_resources_cannot_change_apps(api, world, persona):
    app = PushAppFactory(project=world.project)

    created = api.post(
        "/push/apps", {"name": "x"}, key=world.keys[persona], project=world.project.id
    )
    renamed = api.patch(
        f"/push/apps/{app.id}", {"name": "x"}, key=world.keys[persona], project=world.project.id
    )

    assert created.status_code == renamed.status_code == 403
    assert PushApp.objects.get().name == app.name


def test_a_sending_key_cannot_read_apps(api, world):
    assert api.get("/push/apps", key=world.keys["sending"]).status_code == 403


@pytest.mark.parametrize("body", [{}, {"name": ""}, {"name": 5}, {"name": "x", "colour": "red"}])
def test_a_bad_app_body_is_400_and_creates_nothing(api, world, body):
    response = api.post("/push/apps", body, key=world.keys["project"])

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    assert not PushApp.objects.exists()


def test_an_app_path_with_a_trailing_slash_is_404(api, world):
    app = PushAppFactory(project=world.project)

    assert api.get(f"/push/apps/{app.id}/", key=world.keys["project"]).status_code == 404
