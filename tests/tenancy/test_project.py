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


def test_project_answers_are_what_the_documenting_serializer_writes(api, world):
    # The views build the answer by hand (tenancy/api/serializers.py project_data); the
    # serializer the OpenAPI document is made from must write the same members and values,
    # for default policies and for every policy set to something else.
    from tenancy.api.serializers import ProjectSerializer

    changed = {
        "event_payload_limit_bytes": 2048,
        "contact_fields_limit_bytes": 4096,
        "event_retention_days": 7,
        "run_retention_days": 8,
        "wait_retention_days": 9,
        "prepared_action_ttl_seconds": 60,
        "email_normalization": "gmail",
        "default_from": "Team <team@example.com>",
        "track_opens": False,
        "track_clicks": False,
        "event_retry_base_seconds": 0.5,
        "event_retry_factor": 3.0,
        "event_retry_cap_seconds": 120.0,
        "event_retry_max_attempts": 4,
        "frequency_caps": [{"channel": "email", "max": 3, "per": "P1D"}],
        "quiet_hours": {"start": "22:00", "end": "07:00"},
        "default_timezone": "America/New_York",
    }
    for policies in ({}, changed):
        if policies:
            patched = api.patch("/project", {"policies": policies}, key=world.keys["project"])
            assert patched.status_code == 200, patched.json()
        answer = api.get("/project", key=world.keys["project"]).json()["data"]
        world.project.refresh_from_db()
        assert answer == ProjectSerializer(world.project).data
        assert list(answer) == list(ProjectSerializer(world.project).data)
        assert list(answer["policies"]) == list(ProjectSerializer(world.project).data["policies"])
    assert answer["policies"] == changed
