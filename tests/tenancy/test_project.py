import pytest

pytestmark = pytest.mark.django_db


def test_get_project_returns_the_keys_project_with_its_policies(api, world):
    response = api.get("/project", key=world.keys["project"])
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == 200
    assert body["data"]["id"] == str(world.project.id)
    assert body["data"]["policies"]["prepared_action_ttl_seconds"] == 900
    assert body["data"]["policies"]["default_from"] is None


def test_patch_project_changes_a_policy(api, world):
    response = api.patch(
        "/project", {"policies": {"prepared_action_ttl_seconds": 60}}, key=world.keys["project"]
    )
    assert response.status_code == 200
    assert response.json()["data"]["policies"]["prepared_action_ttl_seconds"] == 60
    again = api.get("/project", key=world.keys["project"])
    assert again.json()["data"]["policies"]["prepared_action_ttl_seconds"] == 60


def test_projects_lists_what_a_team_key_reaches(api, world):
    response = api.get("/projects", key=world.keys["team"])
    assert response.status_code == 200
    body = response.json()
    assert {p["id"] for p in body["data"]} == {str(world.project.id), str(world.other_project.id)}
    assert body["metadata"]["total"] == 2
