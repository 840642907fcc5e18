"""Webhook endpoints through the API: shapes, the secret shown once, validation, the
permission matrix, rotation, the event-type catalogue."""

import base64

import pytest

from config.registries.systemevents import system_event_types
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

ENDPOINT_MEMBERS = {
    "id",
    "url",
    "event_types",
    "description",
    "disabled_at",
    "disabled_reason",
    "created_at",
    "updated_at",
}


def create(api, world, **body):
    body = {"url": "https://hooks.example.com/in", "event_types": ["order_placed"], **body}
    return api.post("/webhook-endpoints", body, key=world.keys["project"])


def test_creating_an_endpoint_shows_its_secret_once(api, world):
    response = create(api, world, description="Orders")

    assert response.status_code == 201
    data = response.json()["data"]
    assert set(data) == ENDPOINT_MEMBERS | {"secret"}
    assert data["event_types"] == ["order_placed"]
    assert data["description"] == "Orders"
    assert data["disabled_at"] is None
    assert data["disabled_reason"] is None
    assert data["secret"].startswith("whsec_")
    assert len(base64.b64decode(data["secret"].removeprefix("whsec_"))) >= 24
    shown = api.get(f"/webhook-endpoints/{data['id']}", key=world.keys["project"])
    assert shown.status_code == 200
    assert set(shown.json()["data"]) == ENDPOINT_MEMBERS
    listed = api.get("/webhook-endpoints", key=world.keys["project"]).json()
    assert [row["id"] for row in listed["data"]] == [data["id"]]
    assert "secret" not in listed["data"][0]
    assert listed["metadata"]["total"] == 1


def test_the_secret_is_encrypted_at_rest(api, world):
    secret = create(api, world).json()["data"]["secret"]

    stored = WebhookEndpoint.objects.get()
    assert secret not in stored.secret
    assert stored.previous_secret == ""


def test_description_is_null_when_not_given(api, world):
    assert create(api, world).json()["data"]["description"] is None


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"url": "http://hooks.example.com/in"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "https://10.0.0.7/in"}, "url"),
        ({"url": "https://[::ffff:127.0.0.1]/in"}, "url"),
        ({"url": "https://169.254.169.254/latest"}, "url"),
        ({"url": "https://localhost/in"}, "url"),
        ({"url": "https://user:pw@hooks.example.com/in"}, "url"),
        ({"event_types": []}, "event_types"),
        ({"event_types": "order_placed"}, "event_types"),
        ({"event_types": ["Order Placed"]}, "event_types.0"),
        ({"event_types": ["order_placed", "sendrealm.no.such"]}, "event_types.1"),
        ({"event_types": ["*", "order_placed"]}, "event_types"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_a_bad_endpoint_is_400_at_its_member(api, world, settings, body, path):
    settings.WEBHOOKS_ALLOW_HTTP = False

    response = create(api, world, **body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert path in [issue["path"] for issue in error["issues"]]
    assert not WebhookEndpoint.objects.exists()


def test_system_event_names_and_every_event_are_accepted(api, world):
    system = create(api, world, event_types=["sendrealm.contact.created", "order_placed"])
    every = create(api, world, event_types=["*"])

    assert system.status_code == 201
    assert every.status_code == 201
    assert every.json()["data"]["event_types"] == ["*"]


def test_patch_changes_members_and_needs_one(api, world):
    endpoint = create(api, world).json()["data"]
    path = f"/webhook-endpoints/{endpoint['id']}"

    changed = api.patch(
        path,
        {"url": "https://hooks.example.com/v2", "event_types": ["*"], "description": None},
        key=world.keys["project"],
    )
    empty = api.patch(path, {}, key=world.keys["project"])

    assert changed.status_code == 200
    assert changed.json()["data"]["url"] == "https://hooks.example.com/v2"
    assert changed.json()["data"]["event_types"] == ["*"]
    assert empty.status_code == 400


def test_patch_disables_and_re_enables(api, world):
    endpoint = create(api, world).json()["data"]
    path = f"/webhook-endpoints/{endpoint['id']}"

    disabled = api.patch(path, {"disabled": True}, key=world.keys["project"]).json()["data"]
    enabled = api.patch(path, {"disabled": False}, key=world.keys["project"]).json()["data"]

    assert disabled["disabled_at"] is not None
    assert disabled["disabled_reason"] == "Disabled through the API."
    assert enabled["disabled_at"] is None
    assert enabled["disabled_reason"] is None


def test_delete_answers_the_endpoint_and_it_is_gone(api, world):
    endpoint = create(api, world).json()["data"]
    path = f"/webhook-endpoints/{endpoint['id']}"

    deleted = api.delete(path, key=world.keys["project"])

    assert deleted.status_code == 200
    assert deleted.json()["data"]["id"] == endpoint["id"]
    assert api.get(path, key=world.keys["project"]).status_code == 404


def test_rotation_answers_a_new_secret_and_keeps_the_old_one_for_a_day(api, world, clock):
    endpoint = create(api, world).json()["data"]

    response = api.post(
        f"/webhook-endpoints/{endpoint['id']}/actions/rotate_secret", {}, key=world.keys["project"]
    )

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["secret"].startswith("whsec_")
    assert data["secret"] != endpoint["secret"]
    stored = WebhookEndpoint.objects.get()
    assert stored.previous_secret != ""
    assert (stored.previous_secret_expires_at - clock.current).total_seconds() == 24 * 3600


def test_read_only_keys_read_and_only_manage_keys_write(api, world):
    endpoint = create(api, world).json()["data"]
    path = f"/webhook-endpoints/{endpoint['id']}"

    assert api.get("/webhook-endpoints", key=world.keys["read_only"]).status_code == 200
    assert api.get(path, key=world.keys["read_only"]).status_code == 200
    assert api.get(f"{path}/deliveries", key=world.keys["read_only"]).status_code == 200
    assert api.get("/webhook-event-types", key=world.keys["read_only"]).status_code == 200
    for key in ("read_only", "sending", "personal_viewer"):
        headers = {"project": world.project.id}
        assert create(api, world).status_code == 201  # the full-access key still can
        refused = [
            api.post(
                "/webhook-endpoints",
                {"url": "https://hooks.example.com/x", "event_types": ["*"]},
                key=world.keys[key],
                **headers,
            ),
            api.patch(path, {"description": "x"}, key=world.keys[key], **headers),
            api.delete(path, key=world.keys[key], **headers),
            api.post(f"{path}/actions/rotate_secret", {}, key=world.keys[key], **headers),
            api.post(
                f"{path}/actions/replay",
                {"since": "2026-01-01T00:00:00Z"},
                key=world.keys[key],
                **headers,
            ),
        ]
        assert [r.status_code for r in refused] == [403] * 5, key
        assert refused[0].json()["error"]["code"] == "forbidden"
    personal = api.patch(
        path, {"description": "y"}, key=world.keys["personal_admin"], project=world.project.id
    )
    assert personal.status_code == 200


def test_another_projects_endpoint_is_404(api, world):
    endpoint = create(api, world).json()["data"]

    response = api.get(f"/webhook-endpoints/{endpoint['id']}", key=world.keys["other_project"])

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert api.get("/webhook-endpoints", key=world.keys["other_project"]).json()["data"] == []


def test_no_key_is_401_and_a_trailing_slash_is_404(api, world):
    assert api.get("/webhook-endpoints").status_code == 401
    assert api.get("/webhook-endpoints/", key=world.keys["project"]).status_code == 404
    assert api.put("/webhook-endpoints", {}, key=world.keys["project"]).status_code == 405


def test_the_list_is_a_cursor_list(api, world):
    for _ in range(3):
        create(api, world)

    first = api.get("/webhook-endpoints", {"limit": 2}, key=world.keys["project"]).json()
    second = api.get(
        "/webhook-endpoints",
        {"limit": 2, "after": first["metadata"]["next"]},
        key=world.keys["project"],
    ).json()
    tampered = api.get("/webhook-endpoints", {"after": "x"}, key=world.keys["project"])

    assert first["metadata"]["has_more"] is True
    assert len(first["data"]) == 2
    assert second["metadata"]["has_more"] is False
    assert len(second["data"]) == 1
    assert tampered.status_code == 400


def test_event_types_list_every_system_event_with_an_example(api, world):
    response = api.get("/webhook-event-types", key=world.keys["project"])

    assert response.status_code == 200
    rows = response.json()["data"]
    names = [row["name"] for row in rows]
    assert names == sorted(names)
    assert {
        "sendrealm.contact.created",
        "sendrealm.contact.updated",
        "sendrealm.audience.entered",
        "sendrealm.audience.left",
        "sendrealm.topic.subscribed",
        "sendrealm.topic.unsubscribed",
        "sendrealm.mail.send",
        "sendrealm.mail.delivery",
        "sendrealm.mail.open",
        "sendrealm.mail.click",
        "sendrealm.mail.bounce",
        "sendrealm.mail.complaint",
        "sendrealm.mail.unsubscribe",
        "sendrealm.push.send",
        "sendrealm.push.open",
        "sendrealm.push.failure",
        "sendrealm.webhook.disabled",
    } <= set(names)
    assert len(names) == len(system_event_types())
    assert all(row["description"] for row in rows)
    assert all(isinstance(row["example"], dict) for row in rows)
    assert all(row["example"] for row in rows)
