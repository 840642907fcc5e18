"""Push delivery end to end: sends through the API, the worker's batch run in-process
against the loopback stand-ins of FCM (and Google's token endpoint), APNs (HTTP/2) and a
Web Push service, and the outcome read back through `GET /push/messages/{id}`."""

import dataclasses
import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench import keys
from bench.standins import ApnsStandin, FcmStandin, WebPushStandin
from config.celery import app
from events.models import Event
from pushproviders.models import PushDelivery, PushInstallation, PushMessage
from pushproviders.readiness import ApnsCredentials
from pushproviders.services.delivery import (
    _Transports,
    push_deliver_batch,
    push_deliver_due,
    push_deliveries_requeue,
)
from pushproviders.services.outcomes import push_messages_roll_up_stale
from pushproviders.tasks import deliver_push, sweep_push
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory
from tests.processes import ROOT
from tests.pushproviders.sending import (
    APNS_BUNDLE_ID,
    APNS_KEY_ID,
    APNS_TEAM_ID,
    PushWorld,
    push_world,
)

pytestmark = pytest.mark.django_db

FCM_TOKEN = "fcm-device-token-0001:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"
OTHER_FCM_TOKEN = "fcm-device-token-0002:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"
APNS_TOKEN = "a1" * 32


@pytest.fixture
def fcm() -> Iterator[FcmStandin]:
    with FcmStandin(account=keys.service_account()) as server:
        yield server


@pytest.fixture
def apns() -> Iterator[ApnsStandin]:
    with ApnsStandin(
        private_key_pem=keys.apns_p8(),
        key_id=APNS_KEY_ID,
        team_id=APNS_TEAM_ID,
        bundle_id=APNS_BUNDLE_ID,
    ) as server:
        yield server


@pytest.fixture
def webpush() -> Iterator[WebPushStandin]:
    with WebPushStandin(vapid_public_key=keys.vapid_pair()[1]) as server:
        yield server


@pytest.fixture
def push(api, world, settings, fcm, apns, webpush, clock) -> PushWorld:
    settings.PUSH_ALLOW_HTTP = True
    settings.PUSH_FCM_BASE_URL = fcm.url
    settings.PUSH_APNS_BASE_URL = apns.url
    push = push_world(api, world)
    push.fcm(keys.service_account(token_uri=fcm.token_uri))
    push.apns()
    push.webpush(*keys.vapid_pair())
    return push


@pytest.fixture
def ada(push):
    return push.contact(first_name="Ada")


def browser(push: PushWorld, webpush: WebPushStandin, contact: Any, **kw: Any) -> Any:
    subscription = webpush.subscribe(**kw)
    installation = push.install(
        contact,
        "webpush",
        {
            "endpoint": subscription.endpoint,
            "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth_b64},
        },
    )
    return installation, subscription


def read(push: PushWorld, message_id: str) -> dict[str, Any]:
    response = push.api.get(f"/push/messages/{message_id}", key=push.key)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def send(push: PushWorld, **body: Any) -> str:
    response = push.send({"body": "Your order shipped", "title": "Order", **body})
    assert response.status_code == 202, response.content
    return response.json()["data"]["id"]


def events(name: str) -> list[Event]:
    return list(Event.objects.filter(event=f"sendrealm.{name}").order_by("created_at", "id"))


# --- sending ------------------------------------------------------------------------------


def test_a_contact_s_devices_on_every_platform_get_the_notification(
    push, ada, fcm, apns, webpush, clock
):
    android = push.install(ada, "fcm", FCM_TOKEN)
    iphone = push.install(ada, "apns", APNS_TOKEN)
    laptop, subscription = browser(push, webpush, ada)
    message_id = send(push, contact_id=str(ada.id), data={"order": "42"})

    assert push_deliver_batch() == 3

    message = read(push, message_id)
    assert message["status"] == "sent"
    assert message["sent_at"] == "2026-01-01T12:00:00Z"
    deliveries = {d["installation_id"]: d for d in message["deliveries"]}
    assert deliveries[str(android.id)] == {
        "installation_id": str(android.id),
        "status": "sent",
        "provider_message_id": "projects/demo-app-123/messages/1",
        "error": None,
    }
    assert deliveries[str(iphone.id)]["status"] == "sent"
    assert (
        deliveries[str(iphone.id)]["provider_message_id"] == (apns.delivered[0].headers["apns-id"])
    )
    assert deliveries[str(laptop.id)]["status"] == "sent"
    assert deliveries[str(laptop.id)]["provider_message_id"]
    assert fcm.messages[0]["token"] == FCM_TOKEN
    assert fcm.messages[0]["notification"] == {"title": "Order", "body": "Your order shipped"}
    assert fcm.messages[0]["data"] == {"order": "42"}
    assert len(apns.delivered) == 1
    assert len(subscription.received) == 1
    assert [fcm.problems, apns.problems, webpush.problems] == [[], [], []]
    sends = events("push.send")
    assert {event.payload["installation_id"] for event in sends} == {
        str(android.id),
        str(iphone.id),
        str(laptop.id),
    }
    assert sends[0].payload["push_id"] == message_id
    assert sends[0].payload["contact_id"] == str(ada.id)
    assert sends[0].payload["template_id"] is None
    assert sends[0].contact_id == ada.id
    assert push_deliver_batch() == 0


def test_a_batch_opens_one_connection_per_provider(push, ada, fcm, apns):
    bob = push.contact()
    for contact, token in ((ada, FCM_TOKEN), (bob, OTHER_FCM_TOKEN)):
        push.install(contact, "fcm", token)
    push.install(ada, "apns", APNS_TOKEN)
    push.install(bob, "apns", "b2" * 32)
    for contact in (ada, bob):
        for n in range(3):
            send(push, contact_id=str(contact.id), body=f"note {n}")

    assert push_deliver_batch() == 12

    assert len(fcm.messages) == 6
    assert fcm.connections <= 2  # the token endpoint and FCM share the stand-in
    assert len(fcm.issued) == 1
    assert len(apns.delivered) == 6
    assert apns.connections == 1
    assert PushMessage.objects.filter(status="sent").count() == 6


def test_a_batch_s_queries_do_not_grow_with_its_messages(push, ada, fcm, apns, settings):
    settings.PUSH_RECORD_EVERY = 100
    bob = push.contact()
    push.install(ada, "fcm", FCM_TOKEN)
    push.install(bob, "apns", APNS_TOKEN)

    def batch_queries(messages: int) -> int:
        for n in range(messages):
            send(push, contact_id=str((ada, bob)[n % 2].id), body=f"note {n}")
        with CaptureQueriesContext(connection) as captured:
            assert push_deliver_batch() == messages
        return len(captured.captured_queries)

    batch_queries(2)  # the providers' readiness is read once per process
    assert batch_queries(2) == batch_queries(8)
    assert PushMessage.objects.filter(status="sent").count() == 12
    assert len(fcm.messages) + len(apns.delivered) == 12


def test_a_drain_keeps_one_connection_per_provider_across_its_batches(
    push, ada, fcm, apns, settings
):
    settings.PUSH_CLAIM_BATCH_SIZE = 2
    push.install(ada, "fcm", FCM_TOKEN)
    push.install(ada, "apns", APNS_TOKEN)
    for n in range(4):
        send(push, contact_id=str(ada.id), body=f"note {n}")

    claimed, more = push_deliver_due(budget_seconds=30)

    assert (claimed, more) == (8, False)
    assert len(fcm.messages) == 4
    assert len(apns.delivered) == 4
    assert apns.connections == 1
    assert fcm.connections <= 2  # the token endpoint and FCM share the stand-in
    assert PushMessage.objects.filter(status="sent").count() == 4


class _FakeTransport:
    def __init__(self) -> None:
        self.closed = False

    def send(self, target: Any, payload: Any) -> str:
        return "id"

    def close(self) -> None:
        self.closed = True


def test_a_drain_keeps_a_transport_while_its_credentials_stay_the_same():
    transports = _Transports()
    old, new = _FakeTransport(), _FakeTransport()
    before = ApnsCredentials(
        key_id="K", team_id="T", private_key_pem="pem", bundle_id="b", environment="production"
    )
    transports.keep("provider", before, old)

    assert transports.get("provider", before) is old
    after = dataclasses.replace(before, key_id="K2")
    assert transports.get("provider", after) is None
    assert old.closed

    transports.keep("provider", after, new)
    transports.forget("provider")
    assert transports.get("provider", after) is None
    assert not new.closed  # a forgotten transport is its user's to close
    transports.keep("provider", after, new)
    transports.close()
    assert new.closed


def test_a_template_send_delivers_what_was_rendered_for_the_contact(push, ada, fcm):
    push.install(ada, "fcm", FCM_TOKEN)
    template = MessageTemplateFactory(project=push.world.project, channel="push")
    TemplateVersionFactory(
        template=template,
        push=True,
        published=True,
        title="Hi {{ contact.fields.first_name }}",
        body="{{ data.item }} is back in stock",
        data={"item": "{{ data.item }}"},
    )
    response = push.send(
        {"contact_id": str(ada.id), "template_id": str(template.id), "data": {"item": "Tea"}}
    )

    push_deliver_batch()

    assert fcm.messages[0]["notification"] == {"title": "Hi Ada", "body": "Tea is back in stock"}
    assert fcm.messages[0]["data"] == {"item": "Tea"}
    [sent] = events("push.send")
    assert sent.payload["template_id"] == str(template.id)
    assert read(push, response.json()["data"]["id"])["status"] == "sent"


def test_a_push_template_test_send_reaches_the_device(push, ada, apns):
    iphone = push.install(ada, "apns", APNS_TOKEN)
    template = MessageTemplateFactory(project=push.world.project, channel="push")
    TemplateVersionFactory(template=template, push=True, title="Hi {{ contact.fields.first_name }}")

    response = push.api.post(
        f"/templates/{template.id}/test", {"installation_id": str(iphone.id)}, key=push.key
    )
    push_deliver_batch()

    assert response.status_code == 202
    assert read(push, response.json()["data"]["push_id"])["status"] == "sent"
    assert len(apns.delivered) == 1


def test_a_test_send_reaches_a_browser(push, ada, webpush):
    laptop, subscription = browser(push, webpush, ada)

    response = push.api.post("/push/tests", {"installation_id": str(laptop.id)}, key=push.key)
    push_deliver_batch()

    assert read(push, response.json()["data"]["id"])["status"] == "sent"
    assert len(subscription.received) == 1
    assert webpush.problems == []


# --- dead tokens --------------------------------------------------------------------------


def test_an_unregistered_fcm_token_deactivates_its_installation(push, ada, fcm, apns):
    android = push.install(ada, "fcm", FCM_TOKEN)
    push.install(ada, "apns", APNS_TOKEN)
    fcm.unregistered.add(FCM_TOKEN)
    message_id = send(push, contact_id=str(ada.id))

    push_deliver_batch()

    message = read(push, message_id)
    assert message["status"] == "partially_sent"
    dead = next(d for d in message["deliveries"] if d["installation_id"] == str(android.id))
    assert dead["status"] == "invalid_token"
    assert dead["provider_message_id"] is None
    assert "UNREGISTERED" in dead["error"]
    android.refresh_from_db()
    assert android.active is False
    [failure] = events("push.failure")
    assert failure.payload["installation_id"] == str(android.id)
    assert failure.payload["status"] == "invalid_token"
    assert failure.payload["push_id"] == message_id
    assert failure.contact_id == ada.id
    assert len(events("push.send")) == 1


def test_a_gone_apns_token_deactivates_its_installation(push, ada, apns):
    iphone = push.install(ada, "apns", APNS_TOKEN)
    apns.unregistered.add(APNS_TOKEN)
    message_id = send(push, contact_id=str(ada.id))

    push_deliver_batch()

    message = read(push, message_id)
    assert message["status"] == "failed"
    assert message["sent_at"] is None
    assert message["deliveries"][0]["status"] == "invalid_token"
    iphone.refresh_from_db()
    assert iphone.active is False


def test_a_gone_web_push_subscription_deactivates_its_installation(push, ada, webpush):
    laptop, _ = browser(push, webpush, ada, answer=410)
    message_id = send(push, contact_id=str(ada.id))

    push_deliver_batch()

    assert read(push, message_id)["deliveries"][0]["status"] == "invalid_token"
    laptop.refresh_from_db()
    assert laptop.active is False


def test_a_device_that_registered_again_after_the_send_stays_active(push, ada, fcm, clock):
    android = push.install(ada, "fcm", FCM_TOKEN)
    fcm.unregistered.add(FCM_TOKEN)
    send(push, contact_id=str(ada.id))
    # The app registered the token again after the send was tried (the clock is stopped,
    # so "after" is a later last_seen_at).
    PushInstallation.objects.filter(pk=android.pk).update(
        last_seen_at=clock() + dt.timedelta(seconds=1)
    )

    push_deliver_batch()

    android.refresh_from_db()
    assert android.active is True
    assert PushDelivery.objects.get().state == "invalid_token"


# --- retries and failures -----------------------------------------------------------------


def test_a_transient_error_is_retried_and_then_sent(push, ada, fcm, clock):
    push.install(ada, "fcm", FCM_TOKEN)
    fcm.fail_next(503)
    message_id = send(push, contact_id=str(ada.id))

    assert push_deliver_batch() == 1

    message = read(push, message_id)
    assert message["status"] == "queued"
    assert message["deliveries"][0]["status"] == "queued"
    assert "503" in message["deliveries"][0]["error"]
    delivery = PushDelivery.objects.get()
    assert delivery.status == "failed"
    assert delivery.next_attempt_at > clock()
    assert push_deliver_batch() == 0

    clock.set(delivery.next_attempt_at)
    assert push_deliver_batch() == 1

    message = read(push, message_id)
    assert message["status"] == "sent"
    assert message["deliveries"][0]["error"] is None
    assert len(fcm.messages) == 1
    assert not events("push.failure")


def test_a_throttled_send_waits_as_long_as_the_provider_asked(push, ada, apns, clock):
    push.install(ada, "apns", APNS_TOKEN)
    apns.fail_next(429, "TooManyRequests", **{"retry-after": "600"})
    send(push, contact_id=str(ada.id))

    push_deliver_batch()

    assert PushDelivery.objects.get().next_attempt_at >= clock() + dt.timedelta(seconds=600)


def test_the_last_failed_attempt_fails_the_delivery(push, ada, fcm, clock, settings):
    settings.PUSH_RETRY_MAX_ATTEMPTS = 2
    push.install(ada, "fcm", FCM_TOKEN)
    fcm.fail_next(503)
    fcm.fail_next(503)
    message_id = send(push, contact_id=str(ada.id))

    push_deliver_batch()
    clock.advance(hours=1)
    push_deliver_batch()

    message = read(push, message_id)
    assert message["status"] == "failed"
    assert message["deliveries"][0]["status"] == "failed"
    assert "503" in message["deliveries"][0]["error"]
    assert PushDelivery.objects.get().status == "dead_lettered"
    assert [event.payload["status"] for event in events("push.failure")] == ["failed"]


def test_an_endpoint_registered_by_name_is_checked_when_delivery_connects(push, ada, webpush):
    # Accepted at registration (what the name resolves to is not asked then), refused
    # when the worker resolves it to a private address to connect.
    intranet = push.install(ada, "webpush", keys.subscription("https://intranet.example.com/p"))
    message_id = send(push, contact_id=str(ada.id))

    push_deliver_batch()

    delivery = read(push, message_id)["deliveries"][0]
    assert delivery["installation_id"] == str(intranet.id)
    assert delivery["status"] == "failed"
    assert delivery["error"] == (
        "The endpoint is refused: The host resolves to an address that is not public."
    )
    assert webpush.problems == []


def test_a_token_uri_registered_by_name_is_checked_when_the_token_is_fetched(push, ada, fcm):
    response = push.api.patch(
        f"/push/providers/{push.providers['fcm'].id}",
        {"service_account": keys.service_account(token_uri="https://intranet.example.com/t")},
        key=push.key,
    )
    assert response.status_code == 200, response.content
    push.install(ada, "fcm", FCM_TOKEN)
    message_id = send(push, contact_id=str(ada.id))

    push_deliver_batch()

    delivery = read(push, message_id)["deliveries"][0]
    assert delivery["status"] == "failed"
    assert delivery["error"] == (
        "The token_uri is refused: The host resolves to an address that is not public."
    )
    assert fcm.issued == []


def test_the_retry_settings_set_the_backoff(push, ada, fcm, clock, settings):
    settings.PUSH_RETRY_BASE_SECONDS = 1000
    settings.PUSH_RETRY_FACTOR = 2
    settings.PUSH_RETRY_CAP_SECONDS = 1500
    push.install(ada, "fcm", FCM_TOKEN)
    fcm.fail_next(503)
    fcm.fail_next(503)
    send(push, contact_id=str(ada.id))

    waits = []
    for _ in range(2):
        started = clock()
        push_deliver_batch()
        delivery = PushDelivery.objects.get()
        waits.append((delivery.next_attempt_at - started).total_seconds())
        clock.set(delivery.next_attempt_at)

    # Half the wait is fixed, half random: 1000 s, then 2000 s capped at 1500 s.
    assert 500 <= waits[0] <= 1000
    assert 750 <= waits[1] <= 1500


def test_the_retry_settings_are_read_from_the_environment():
    policy = "from pushproviders.conf import retry_policy as p; print(p())"
    environment = {
        **os.environ,
        "PUSH_RETRY_BASE_SECONDS": "7.5",
        "PUSH_RETRY_FACTOR": "2",
        "PUSH_RETRY_CAP_SECONDS": "120",
        "PUSH_RETRY_MAX_ATTEMPTS": "4",
    }
    script = f"import django; django.setup(); {policy}"

    printed = subprocess.run(
        [sys.executable, "-c", script],
        env=environment,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    assert printed.strip() == (
        "RetryPolicy(base_seconds=7.5, factor=2.0, cap_seconds=120.0, max_attempts=4)"
    )


def test_a_permanent_refusal_fails_at_once_and_keeps_the_installation(push, ada, apns):
    iphone = push.install(ada, "apns", APNS_TOKEN)
    apns.fail_next(400, "PayloadTooLarge")
    message_id = send(push, contact_id=str(ada.id))

    push_deliver_batch()

    delivery = read(push, message_id)["deliveries"][0]
    assert delivery["status"] == "failed"
    assert "PayloadTooLarge" in delivery["error"]
    iphone.refresh_from_db()
    assert iphone.active is True


def test_a_provider_that_keeps_failing_is_not_tried_for_the_rest_of_the_batch(
    push, ada, fcm, clock
):
    bob, eve = push.contact(), push.contact()
    for contact, token in ((ada, FCM_TOKEN), (bob, OTHER_FCM_TOKEN), (eve, "fcm-3" * 5)):
        push.install(contact, "fcm", token)
        send(push, contact_id=str(contact.id))
    fcm.fail_next(429, "RESOURCE_EXHAUSTED", **{"retry-after": "30"})

    push_deliver_batch()

    assert fcm.messages == []
    deliveries = PushDelivery.objects.all()
    assert {d.status for d in deliveries} == {"failed"}
    assert all(d.next_attempt_at >= clock() + dt.timedelta(seconds=30) for d in deliveries)


# --- providers that stop sending, and installations that go ---------------------------------


def test_a_provider_disabled_after_the_send_sends_nothing_and_keeps_installations_active(
    push, ada, fcm
):
    android = push.install(ada, "fcm", FCM_TOKEN)
    message_id = send(push, contact_id=str(ada.id))
    provider = push.providers["fcm"]
    push.api.patch(f"/push/providers/{provider.id}", {"status": "disabled"}, key=push.key)

    push_deliver_batch()

    message = read(push, message_id)
    assert message["status"] == "failed"
    assert message["deliveries"][0]["status"] == "failed"
    assert message["deliveries"][0]["error"] == "The app's fcm provider is disabled."
    assert fcm.messages == []
    assert fcm.issued == []
    android.refresh_from_db()
    assert android.active is True
    assert [event.payload["status"] for event in events("push.failure")] == ["failed"]


def test_a_requeued_delivery_is_sent_once_its_provider_is_back(push, ada, fcm):
    push.install(ada, "fcm", FCM_TOKEN)
    provider = push.providers["fcm"]
    push.api.patch(f"/push/providers/{provider.id}", {"status": "disabled"}, key=push.key)
    message_id = send(push, contact_id=str(ada.id))
    assert read(push, message_id)["status"] == "failed"
    push.api.patch(f"/push/providers/{provider.id}", {"status": "active"}, key=push.key)

    assert push_deliveries_requeue(ids=PushDelivery.objects.values_list("pk", flat=True)) == 1
    assert read(push, message_id)["status"] == "queued"
    push_deliver_batch()

    message = read(push, message_id)
    assert message["status"] == "sent"
    assert message["deliveries"][0]["status"] == "sent"
    assert len(fcm.messages) == 1


def test_a_removed_installation_fails_its_queued_delivery(push, ada, fcm):
    android = push.install(ada, "fcm", FCM_TOKEN)
    message_id = send(push, contact_id=str(ada.id))
    push.api.delete(f"/push/installations/{android.id}", key=push.key)

    push_deliver_batch()

    delivery = read(push, message_id)["deliveries"][0]
    assert delivery == {
        "installation_id": str(android.id),
        "status": "failed",
        "provider_message_id": None,
        "error": "The installation was removed.",
    }
    assert fcm.messages == []


def test_a_message_left_without_its_roll_up_is_rolled_up_by_the_sweep(push, ada, fcm, clock):
    push.install(ada, "fcm", FCM_TOKEN)
    message_id = send(push, contact_id=str(ada.id))
    push_deliver_batch()
    # As if the worker stopped between recording the outcome and rolling it up.
    PushMessage.objects.filter(pk=message_id).update(status="queued", sent_at=None)

    assert push_messages_roll_up_stale() == 0
    clock.advance(minutes=2)
    assert push_messages_roll_up_stale() == 1

    assert read(push, message_id)["status"] == "sent"


def test_the_wake_up_task_and_the_sweep_deliver_what_is_due(push, ada, fcm, settings):
    settings.PUSH_WAKE_SETTLE_SECONDS = 0
    push.install(ada, "fcm", FCM_TOKEN)
    first = send(push, contact_id=str(ada.id))

    assert deliver_push() == 1
    second = send(push, contact_id=str(ada.id))
    assert sweep_push() == 1

    assert [read(push, pk)["status"] for pk in (first, second)] == ["sent", "sent"]
    assert app.conf.beat_schedule["pushproviders.sweep_push"]["task"] == "pushproviders.sweep_push"
    assert app.conf.task_routes["pushproviders.*"] == {"queue": "push"}
