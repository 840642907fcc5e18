"""Replays through the API: one delivery (same webhook-id), or an endpoint's failed
deliveries of a time range (bounded, and only what is still failed)."""

import datetime as dt

import pytest

from config.runtime.clock import iso_utc
from tests.webhooks.conftest import Reply, drain, verified
from tests.webhooks.test_delivery import deliveries, endpoint, send
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


def test_replaying_a_delivered_delivery_sends_it_again_with_the_same_id(
    api, world, receiver, wall_clock
):
    hook = endpoint(api, world, receiver.url)
    send(api, world)
    drain()
    [logged] = deliveries(api, world, hook["id"])

    response = api.post(
        f"/webhook-deliveries/{logged['id']}/actions/replay", {}, key=world.keys["project"]
    )
    drain()

    assert response.status_code == 202
    assert response.json()["data"]["status"] == "pending"
    first, second = receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert verified(hook["secret"], first) == verified(hook["secret"], second)
    [after] = deliveries(api, world, hook["id"])
    assert after["status"] == "delivered"
    assert after["attempts"] == 2


def test_replaying_an_unknown_or_foreign_delivery_is_404(api, world, receiver, wall_clock):
    endpoint(api, world, receiver.url)
    send(api, world)
    drain()
    delivery = WebhookDelivery.objects.get()

    foreign = api.post(
        f"/webhook-deliveries/{delivery.pk}/actions/replay", {}, key=world.keys["other_project"]
    )
    unknown = api.post(
        "/webhook-deliveries/00000000-0000-4000-8000-000000000000/actions/replay",
        {},
        key=world.keys["project"],
    )

    assert foreign.status_code == 404
    assert unknown.status_code == 404


def test_replaying_to_a_disabled_endpoint_is_409(api, world, receiver, wall_clock):
    hook = endpoint(api, world, receiver.url)
    send(api, world)
    drain()
    api.patch(f"/webhook-endpoints/{hook['id']}", {"disabled": True}, key=world.keys["project"])
    delivery = WebhookDelivery.objects.get()

    one = api.post(
        f"/webhook-deliveries/{delivery.pk}/actions/replay", {}, key=world.keys["project"]
    )
    many = api.post(
        f"/webhook-endpoints/{hook['id']}/actions/replay",
        {"since": iso_utc(wall_clock.current - dt.timedelta(hours=1))},
        key=world.keys["project"],
    )

    assert one.status_code == 409
    assert one.json()["error"]["code"] == "conflict"
    assert many.status_code == 409


def test_replaying_a_range_sends_its_failed_deliveries_again(
    api, world, receiver, wall_clock, settings
):
    settings.WEBHOOK_RETRY_MAX_ATTEMPTS = 1
    hook = endpoint(api, world, receiver.url)
    start = wall_clock.current
    receiver.reply(Reply(status=500), Reply(status=500), Reply(status=500))
    for email in ("a@example.com", "b@example.com", "c@example.com"):
        send(api, world, email=email)
        drain()
        wall_clock.advance(minutes=10)
    send(api, world, email="d@example.com")
    drain()  # delivered: not replayed
    assert [row["status"] for row in deliveries(api, world, hook["id"])] == [
        "failed",
        "failed",
        "failed",
        "delivered",
    ]
    received = len(receiver.received)

    response = api.post(
        f"/webhook-endpoints/{hook['id']}/actions/replay",
        {"since": iso_utc(start + dt.timedelta(minutes=5)), "until": iso_utc(wall_clock.current)},
        key=world.keys["project"],
    )
    again = api.post(
        f"/webhook-endpoints/{hook['id']}/actions/replay",
        {"since": iso_utc(start + dt.timedelta(minutes=5))},
        key=world.keys["project"],
    )
    drain()

    assert response.status_code == 202
    assert response.json()["data"] == {"count": 2}
    # The second call found them pending already: nothing is queued twice.
    assert again.json()["data"] == {"count": 0}
    assert len(receiver.received) == received + 2
    assert [row["status"] for row in deliveries(api, world, hook["id"])] == [
        "failed",
        "delivered",
        "delivered",
        "delivered",
    ]


def test_a_range_replay_is_bounded(api, world, receiver, wall_clock, settings):
    settings.WEBHOOK_RETRY_MAX_ATTEMPTS = 1
    settings.WEBHOOK_REPLAY_MAX_DELIVERIES = 2
    hook = endpoint(api, world, receiver.url)
    receiver.reply(*[Reply(status=500)] * 3)
    start = wall_clock.current
    for email in ("a@example.com", "b@example.com", "c@example.com"):
        send(api, world, email=email)
    drain()
    path = f"/webhook-endpoints/{hook['id']}/actions/replay"

    first = api.post(path, {"since": iso_utc(start)}, key=world.keys["project"])
    second = api.post(path, {"since": iso_utc(start)}, key=world.keys["project"])

    assert first.json()["data"] == {"count": 2}
    assert second.json()["data"] == {"count": 1}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"since": "yesterday"},
        {"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
    ],
)
def test_a_bad_range_is_400(api, world, receiver, body):
    hook = endpoint(api, world, receiver.url)

    response = api.post(
        f"/webhook-endpoints/{hook['id']}/actions/replay", body, key=world.keys["project"]
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
