"""The OpenAPI document says what the API does: paging, JSON-only bodies, strict bodies and
the rules across their members, checked against the views and serializers themselves."""

import pytest

pytestmark = pytest.mark.django_db


def test_a_form_encoded_body_is_415_in_the_envelope(api, world):
    response = api.request(
        "POST",
        "/contacts/upsert",
        key=world.keys["project"],
        data="email=ada%40example.com",
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 415
    body = response.json()
    assert body["status"] == 415
    assert body["error"]["code"] == "unsupported_media_type"
    assert body["error"]["issues"] == []


def test_a_multipart_body_is_415_in_the_envelope(api, world):
    response = api.client.patch(
        "/project",
        {"name": "Renamed"},
        format="multipart",
        headers={"Authorization": f"Bearer {world.keys['project']}"},
    )

    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    world.project.refresh_from_db()
    assert world.project.name == "Main"
