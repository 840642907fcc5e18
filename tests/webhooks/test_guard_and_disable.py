"""Where deliveries may go (the URL guard at connect time), and endpoints that keep
failing: disabled after WEBHOOK_DISABLE_AFTER_HOURS with `sendrealm.webhook.disabled`,
re-enabled by PATCH."""

import pytest

from events.models import Event
from events.services.processing import events_process_batch
from tests.webhooks.conftest import Reply, drain
from tests.webhooks.test_delivery import deliveries, endpoint, send
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "host",
    [
        "intranet.example.com",  # private
        "loopback.example.com",  # loopback
        "metadata.example.com",  # link-local (cloud metadata)
        "mapped.example.com",  # IPv4-mapped IPv6 of loopback
        "sneaky.example.com",  # one public and one private address
    ],
)
def test_a_name_that_resolves_to_a_non_public_address_is_refused_when_connecting(
    api, world, receiver, wall_clock, settings, names, host
):
    settings.WEBHOOKS_ALLOW_HTTP = False
    port = receiver.server.server_address[1]
    # The URL's text is fine; only the answer of DNS when the delivery connects is not.
    hook = endpoint(api, world, f"https://{host}:{port}/hooks")
    send(api, world)

    drain()

    assert receiver.received == []
    [logged] = deliveries(api, world, hook["id"])
    assert logged["status"] == "failed"
    assert logged["last_error"] == ("Refused: The host resolves to an address that is not public.")


def test_a_name_that_moved_to_a_private_address_after_creation_is_refused(
    api, world, receiver, wall_clock, settings, names
):
    settings.WEBHOOKS_ALLOW_HTTP = False
    names["moving.example.com"] = ["93.184.216.34"]
    hook = endpoint(api, world, "https://moving.example.com/hooks")
    names["moving.example.com"] = ["10.1.1.1"]
    send(api, world)

    drain()

    [logged] = deliveries(api, world, hook["id"])
    assert logged["status"] == "failed"
    assert logged["last_error"].startswith("Refused:")
    del names["moving.example.com"]


def test_loopback_http_is_refused_without_the_test_setting(
    api, world, receiver, wall_clock, settings
):
    hook = endpoint(api, world, receiver.url)
    settings.WEBHOOKS_ALLOW_HTTP = False
    send(api, world)

    drain()

    assert receiver.received == []
    [logged] = deliveries(api, world, hook["id"])
    assert logged["status"] == "failed"
    assert logged["last_error"] == "Refused: Must be an https URL."


def test_private_addresses_stay_refused_with_the_test_setting(
    api, world, receiver, wall_clock, names
):
    hook = endpoint(api, world, "http://intranet.example.com/hooks")
    send(api, world)

    drain()

    [logged] = deliveries(api, world, hook["id"])
    assert logged["status"] == "failed"
    assert logged["last_error"].startswith("Refused:")


def test_an_endpoint_failing_for_72_hours_is_disabled_with_a_system_event(
    api, world, receiver, wall_clock
):
    hook = endpoint(api, world, receiver.url)
    receiver.reply(*[Reply(status=500)] * 30)
    send(api, world)
    drain()
    stored = WebhookEndpoint.objects.get()
    started = stored.failing_since
    assert started == wall_clock.current

    wall_clock.advance(hours=71)
    drain()
    assert WebhookEndpoint.objects.get().disabled_at is None
    wall_clock.advance(hours=1, seconds=1)
    drain()

    shown = api.get(f"/webhook-endpoints/{hook['id']}", key=world.keys["project"]).json()["data"]
    assert shown["disabled_at"] is not None
    assert shown["disabled_reason"] == "Every delivery failed for 72 hours."
    [event] = Event.objects.filter(event="sendrealm.webhook.disabled")
    assert event.payload["endpoint_id"] == hook["id"]
    assert event.payload["url"] == receiver.url
    assert event.status == "processed"
    # Its pending delivery is not sent to the disabled endpoint any more.
    sent = len(receiver.received)
    wall_clock.advance(hours=7)
    drain()
    assert len(receiver.received) == sent
    [logged] = deliveries(api, world, hook["id"])
    assert logged["status"] == "failed"
    assert logged["last_error"] == "The endpoint is disabled."


def test_a_success_ends_the_failing_streak(api, world, receiver, wall_clock):
    endpoint(api, world, receiver.url)
    receiver.reply(Reply(status=500))
    send(api, world)
    drain()
    assert WebhookEndpoint.objects.get().failing_since is not None

    wall_clock.advance(seconds=61)
    drain()

    assert WebhookEndpoint.objects.get().failing_since is None


def test_the_disabled_event_reaches_other_endpoints(api, world, receiver, wall_clock, settings):
    settings.WEBHOOK_DISABLE_AFTER_HOURS = 1
    failing = endpoint(api, world, receiver.url + "/failing")
    watcher = endpoint(api, world, receiver.url + "/watcher", ["sendrealm.webhook.disabled"])
    receiver.reply(Reply(status=500), Reply(status=500))
    send(api, world)
    drain()

    wall_clock.advance(hours=2)
    drain()

    [delivered] = [r for r in receiver.received if r.path == "/hooks/watcher"]
    assert delivered.headers["webhook-id"].startswith("msg_")
    assert b'"sendrealm.webhook.disabled"' in delivered.body
    assert failing["id"].encode() in delivered.body
    assert deliveries(api, world, watcher["id"])[0]["status"] == "delivered"


def test_patch_re_enables_a_disabled_endpoint_and_forgets_its_failures(
    api, world, receiver, wall_clock, settings
):
    settings.WEBHOOK_DISABLE_AFTER_HOURS = 1
    hook = endpoint(api, world, receiver.url)
    receiver.reply(Reply(status=500), Reply(status=500))
    send(api, world)
    drain()
    wall_clock.advance(hours=2)
    drain()
    assert WebhookEndpoint.objects.get().disabled_at is not None

    response = api.patch(
        f"/webhook-endpoints/{hook['id']}", {"disabled": False}, key=world.keys["project"]
    )

    assert response.status_code == 200
    assert response.json()["data"]["disabled_at"] is None
    assert WebhookEndpoint.objects.get().failing_since is None
    send(api, world, email="grace@example.com")
    drain()
    assert receiver.received[-1].headers["webhook-id"] != receiver.received[0].headers["webhook-id"]


def test_a_deleted_endpoints_pending_deliveries_are_not_sent(api, world, receiver, wall_clock):
    hook = endpoint(api, world, receiver.url)
    send(api, world)
    while events_process_batch().claimed:
        pass

    api.delete(f"/webhook-endpoints/{hook['id']}", key=world.keys["project"])
    drain()
    send(api, world, email="later@example.com")
    drain()

    assert receiver.received == []
    [delivery] = WebhookDelivery.objects.all()
    assert delivery.state == "failed"
    assert delivery.error == "The endpoint was deleted."
    assert (
        api.get(
            f"/webhook-endpoints/{hook['id']}/deliveries", key=world.keys["project"]
        ).status_code
        == 404
    )
