"""The project policy `contact_fields_limit_bytes`: shown, changed, bounded."""

import pytest

pytestmark = pytest.mark.django_db


def test_the_policy_is_shown_with_its_default(api, world):
    response = api.get("/project", key=world.keys["project"])

    assert response.json()["data"]["policies"]["contact_fields_limit_bytes"] == 65536


def test_the_policy_is_changed_with_patch_and_applies_at_once(api, world):
    response = api.patch(
        "/project", {"policies": {"contact_fields_limit_bytes": 1024}}, key=world.keys["project"]
    )

    assert response.status_code == 200
    assert response.json()["data"]["policies"]["contact_fields_limit_bytes"] == 1024
    upsert = api.post(
        "/contacts/upsert",
        {"email": "a@example.com", "fields": {"bio": "x" * 1024}},
        key=world.keys["project"],
    )
    assert upsert.status_code == 422
    assert upsert.json()["error"]["code"] == "payload_too_large"


@pytest.mark.parametrize("value", [1023, 1048577, "big", None])
def test_the_policy_outside_its_range_is_a_400_at_its_path(api, world, value):
    response = api.patch(
        "/project", {"policies": {"contact_fields_limit_bytes": value}}, key=world.keys["project"]
    )

    body = response.json()
    assert response.status_code == 400
    assert [issue["path"] for issue in body["error"]["issues"]] == [
        "policies.contact_fields_limit_bytes"
    ]
