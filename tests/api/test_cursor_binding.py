"""A signed cursor is bound to the list and project that issued it: used anywhere else,
it is 400 at `after` (CONTRACT 4)."""

import pytest

from tests.contacts.audiences.factories import AudienceFactory, AudienceMembershipFactory
from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db


def assert_cursor_refused(response):
    body = response.json()
    assert response.status_code == 400, body
    assert body["error"]["code"] == "validation_error"
    assert [issue["path"] for issue in body["error"]["issues"]] == ["after"]


def test_a_cursor_of_one_list_is_refused_by_another(api, world):
    ContactFactory.create_batch(2, project=world.project)
    AudienceFactory.create_batch(2, project=world.project)
    cursor = api.get("/contacts", {"limit": 1}, key=world.keys["project"]).json()["metadata"]

    response = api.get("/audiences", {"after": cursor["next"]}, key=world.keys["project"])

    assert_cursor_refused(response)


def test_a_cursor_of_one_project_is_refused_in_another(api, world):
    ContactFactory.create_batch(2, project=world.project)
    ContactFactory.create_batch(2, project=world.other_project)
    cursor = api.get("/contacts", {"limit": 1}, key=world.keys["project"]).json()["metadata"]

    response = api.get("/contacts", {"after": cursor["next"]}, key=world.keys["other_project"])

    assert_cursor_refused(response)


def test_a_cursor_of_one_project_is_refused_for_the_same_key_in_another(api, world):
    ContactFactory.create_batch(2, project=world.project)
    key = world.keys["team"]
    cursor = api.get("/contacts", {"limit": 1}, key=key).json()["metadata"]["next"]

    elsewhere = api.get("/contacts", {"after": cursor}, key=key, project=world.other_project.id)
    here = api.get("/contacts", {"after": cursor}, key=key, project=world.project.id)

    assert_cursor_refused(elsewhere)
    assert here.status_code == 200


def test_a_cursor_of_one_audience_is_refused_by_another_audiences_members(api, world):
    first, second = AudienceFactory.create_batch(2, project=world.project)
    AudienceMembershipFactory.create_batch(2, audience=first)
    AudienceMembershipFactory.create_batch(2, audience=second)
    cursor = api.get(f"/audiences/{first.id}/members", {"limit": 1}, key=world.keys["project"])

    response = api.get(
        f"/audiences/{second.id}/members",
        {"after": cursor.json()["metadata"]["next"]},
        key=world.keys["project"],
    )

    assert_cursor_refused(response)


def test_a_cursor_works_whatever_the_case_of_the_ids_in_the_path(api, world):
    audience = AudienceFactory(project=world.project)
    AudienceMembershipFactory.create_batch(3, audience=audience)
    first = api.get(f"/audiences/{audience.id}/members", {"limit": 1}, key=world.keys["project"])

    response = api.get(
        f"/audiences/{str(audience.id).upper()}/members",
        {"after": first.json()["metadata"]["next"]},
        key=world.keys["project"],
    )

    assert response.status_code == 200
    assert response.json()["metadata"]["items"] == 2
