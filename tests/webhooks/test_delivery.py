"""Deliveries end to end in-process: events sent through the API, processed and delivered
by the workers' loop (`drain`, the same functions the Celery tasks call), to a real
loopback receiver; every request is verified with the Standard Webhooks reference
library. Workers run in-process so a test can stop between the claim and the outcome, and
move the service clock past a lease or a backoff."""

import datetime as dt
import json
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from bench.webhook_receiver import WebhookReceiver
from config.workqueue.models import WorkStatus
from events.models import Event
from events.services.processing import events_process_batch
from tests.webhooks.conftest import Reply, drain, verified
from webhooks.models import DeliveryState, WebhookDelivery, WebhookEndpoint
from webhooks.queue import WEBHOOK_QUEUE
from webhooks.services.delivery import _Sender, webhook_deliver_batch, webhook_deliver_due

pytestmark = pytest.mark.django_db


def endpoint(api, world, url, event_types=("order_placed",)):
    response = api.post(
        "/webhook-endpoints",
        {"url": url, "event_types": list(event_types)},
        key=world.keys["project"],
    )
    assert response.status_code == 201, response.json()
    return response.json()["data"]


def send(api, world, name="order_placed", **body):
    body = {"event": name, "email": "ada@example.com", "payload": {"total": 42}, **body}
    response = api.post("/events", body, key=world.keys["project"])
    assert response.status_code == 202, response.json()
    return response.json()["data"]


def deliveries(api, world, endpoint_id):
    response = api.get(f"/webhook-endpoints/{endpoint_id}/deliveries", key=world.keys["project"])
    assert response.status_code == 200
    return response.json()["data"]


def test_a_processed_event_is_delivered_signed_and_logged(api, world, receiver, wall_clock):
    hook = endpoint(api, world, receiver.url)
    event = send(api, world, external_id="user_7")

    drain()

    [request] = receiver.received
    assert request.path == "/hooks"
    assert request.headers["content-type"] == "application/json"
    body = verified(hook["secret"], request)
    assert body["type"] == "order_placed"
    assert body["timestamp"].endswith("Z")
    data = body["data"]
    assert data["event_id"] == event["id"]
    assert data["event"] == "order_placed"
    assert data["email"] == "ada@example.com"
    assert data["external_id"] == "user_7"
    assert data["payload"] == {"total": 42}
    assert data["contact_id"] is not None
    assert request.headers["webhook-id"] == "msg_" + event["id"].replace("-", "")
    assert int(request.headers["webhook-timestamp"]) == int(wall_clock.current.timestamp())
    [logged] = deliveries(api, world, hook["id"])
    assert logged == {
        "id": logged["id"],
        "event_type": "order_placed",
        "webhook_id": request.headers["webhook-id"],
        "status": "delivered",
        "attempts": 1,
        "last_status_code": 200,
        "last_error": None,
        "next_attempt_at": None,
        "created_at": logged["created_at"],
        "delivered_at": logged["delivered_at"],
    }
    assert logged["delivered_at"] is not None


def test_system_events_are_delivered_by_name(api, world, receiver, wall_clock):
    hook = endpoint(api, world, receiver.url, ["sendrealm.contact.created"])
    send(api, world, email="new@example.com")

    drain()

    [request] = receiver.received
    body = verified(hook["secret"], request)
    assert body["type"] == "sendrealm.contact.created"
    assert body["data"]["email"] == "new@example.com"
    assert set(body["data"]) == {"contact_id", "email", "external_id"}


def test_only_matching_enabled_endpoints_get_a_delivery(api, world, receiver, wall_clock):
    every = endpoint(api, world, receiver.url, ["*"])
    other = endpoint(api, world, receiver.url, ["order_shipped"])
    disabled = endpoint(api, world, receiver.url, ["order_placed"])
    api.patch(f"/webhook-endpoints/{disabled['id']}", {"disabled": True}, key=world.keys["project"])
    send(api, world)

    drain()

    # The customer event and the contact it created, both to the "*" endpoint only.
    types = sorted(json.loads(request.body)["type"] for request in receiver.received)
    assert types == ["order_placed", "sendrealm.contact.created"]
    assert len(deliveries(api, world, every["id"])) == 2
    assert deliveries(api, world, other["id"]) == []
    assert deliveries(api, world, disabled["id"]) == []


def test_reprocessing_an_event_makes_no_second_delivery(api, world, receiver, wall_clock):
    endpoint(api, world, receiver.url)
    send(api, world)
    drain()
    event = Event.objects.get(event="order_placed")

    # Processing sees the event again (a redelivered batch): the unique key keeps one row.
    Event.objects.filter(pk=event.pk).update(status="accepted", next_attempt_at=wall_clock.current)
    drain()

    assert WebhookDelivery.objects.count() == 1
    assert len(receiver.received) == 1


def test_a_500_is_retried_with_the_same_webhook_id_and_body(api, world, receiver, wall_clock):
    hook = endpoint(api, world, receiver.url)
    receiver.reply(Reply(status=500, body=b"database down " * 40))
    send(api, world)

    drain()
    [failed] = deliveries(api, world, hook["id"])
    wall_clock.advance(seconds=61)
    drain()

    assert failed["status"] == "pending"
    assert failed["attempts"] == 1
    assert failed["last_status_code"] == 500
    assert failed["last_error"].startswith("HTTP 500: database down")
    assert len(failed["last_error"]) < 250
    assert failed["next_attempt_at"] is not None
    first, second = receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.body == second.body
    assert verified(hook["secret"], first) == verified(hook["secret"], second)
    [logged] = deliveries(api, world, hook["id"])
    assert logged["status"] == "delivered"
    assert logged["attempts"] == 2
    assert logged["last_status_code"] == 200
    assert logged["last_error"] is None


def test_a_worker_killed_mid_delivery_is_retried_with_the_same_webhook_id(
    api, world, receiver, wall_clock, settings
):
    """The worker claims the delivery and sends it, then dies before recording anything;
    once its lease runs out another worker claims the row and sends it again."""
    settings.WEBHOOK_LEASE_SECONDS = 30
    hook = endpoint(api, world, receiver.url)
    send(api, world)
    while events_process_batch().claimed:
        pass
    _, claimed = WEBHOOK_QUEUE.claim()
    sender = _Sender()
    assert sender.prepare(claimed[0]) is None
    sender.attempt(claimed[0])
    sender.close()

    assert webhook_deliver_batch() == 0  # still leased to the dead worker
    wall_clock.advance(seconds=31)
    assert webhook_deliver_batch() == 1

    first, second = receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.body == second.body
    verified(hook["secret"], first)
    verified(hook["secret"], second)
    assert WebhookDelivery.objects.get().state == DeliveryState.DELIVERED


def test_a_receiver_that_times_out_is_a_failed_attempt(api, world, receiver, wall_clock, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.3
    hook = endpoint(api, world, receiver.url)
    receiver.reply(Reply(delay=1.0))
    send(api, world)

    drain()

    [logged] = deliveries(api, world, hook["id"])
    assert logged["status"] == "pending"
    assert logged["last_status_code"] is None
    assert logged["last_error"] == "No answer within 0.3 s."
    assert logged["next_attempt_at"] is not None


def test_a_redirect_is_a_failure_and_is_not_followed(api, world, receiver, wall_clock):
    hook = endpoint(api, world, receiver.url)
    receiver.reply(Reply(status=302, headers={"Location": receiver.url + "/elsewhere"}))
    send(api, world)

    drain()

    assert [request.path for request in receiver.received] == ["/hooks"]
    [logged] = deliveries(api, world, hook["id"])
    assert logged["status"] == "pending"
    assert logged["last_status_code"] == 302
    assert logged["last_error"] == "HTTP 302 (redirects are not followed)"


def test_retries_that_run_out_leave_the_delivery_failed(api, world, receiver, wall_clock, settings):
    settings.WEBHOOK_RETRY_MAX_ATTEMPTS = 2
    hook = endpoint(api, world, receiver.url)
    receiver.reply(Reply(status=503), Reply(status=404))
    send(api, world)

    drain()
    wall_clock.advance(seconds=61)
    drain()

    [logged] = deliveries(api, world, hook["id"])
    assert logged["status"] == "failed"
    assert logged["attempts"] == 2
    assert logged["last_status_code"] == 404
    assert logged["next_attempt_at"] is None
    assert len(receiver.received) == 2


def test_the_default_retries_span_about_three_days():
    policy = WEBHOOK_QUEUE.retry_policy(None)

    steps = [
        min(policy.cap_seconds, policy.base_seconds * policy.factor ** (attempt - 1))
        for attempt in range(1, policy.max_attempts)
    ]

    # Each wait is between half and all of its step (the jitter): 48 to 96 hours in all,
    # 72 on average, and the sum of 21 independent waits strays little from the average.
    assert sum(steps) / 2 == pytest.approx(48 * 3600, rel=0.01)
    assert sum(steps) * 0.75 == pytest.approx(72 * 3600, rel=0.01)


def test_after_a_rotation_both_secrets_verify_for_a_day(api, world, receiver, wall_clock):
    hook = endpoint(api, world, receiver.url)
    rotated = api.post(
        f"/webhook-endpoints/{hook['id']}/actions/rotate_secret", {}, key=world.keys["project"]
    ).json()["data"]
    send(api, world)
    drain()
    [request] = receiver.received

    assert len(request.headers["webhook-signature"].split(" ")) == 2
    assert verified(hook["secret"], request) == verified(rotated["secret"], request)
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "A" * 44).verify(request.body, request.headers)


def test_a_day_after_a_rotation_only_the_new_secret_signs(api, world, receiver, wall_clock):
    hook = endpoint(api, world, receiver.url)
    rotated = api.post(
        f"/webhook-endpoints/{hook['id']}/actions/rotate_secret", {}, key=world.keys["project"]
    ).json()["data"]
    WebhookEndpoint.objects.update(
        previous_secret_expires_at=wall_clock.current - dt.timedelta(seconds=1)
    )
    send(api, world)
    drain()
    [request] = receiver.received

    assert len(request.headers["webhook-signature"].split(" ")) == 1
    verified(rotated["secret"], request)
    with pytest.raises(WebhookVerificationError):
        verified(hook["secret"], request)


def test_a_receiver_that_times_out_does_not_hold_up_the_others(
    api, world, receiver, wall_clock, settings
):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    slow = [endpoint(api, world, receiver.url + f"/slow{i}") for i in range(4)]
    fast = endpoint(api, world, receiver.url + "/fast")
    for i in range(4):
        receiver.route(f"/hooks/slow{i}", Reply(delay=1.5))
    send(api, world)
    while events_process_batch().claimed:
        pass

    started = time.monotonic()
    assert webhook_deliver_batch() == 5
    took = time.monotonic() - started

    # Four timeouts waited out together, not one after another.
    assert took < 1.5
    assert deliveries(api, world, fast["id"])[0]["status"] == "delivered"
    for hook in slow:
        assert deliveries(api, world, hook["id"])[0]["last_error"] == "No answer within 0.5 s."


def statements(run) -> int:
    with CaptureQueriesContext(connection) as captured:
        run()
    return sum(
        1
        for query in captured.captured_queries
        if not query["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
    )


def test_a_batch_makes_its_deliveries_in_a_fixed_number_of_statements(
    api, world, receiver, wall_clock
):
    for i in range(3):
        endpoint(api, world, receiver.url + f"/{i}")
    send(api, world, email="first@example.com")
    drain()  # the contacts' and the triggers' first loads
    for i in range(2):
        send(api, world, email=f"few{i}@example.com")
    few = statements(events_process_batch)
    drain()
    for i in range(20):
        send(api, world, email=f"many{i}@example.com")

    assert statements(events_process_batch) == few
    assert WebhookDelivery.objects.filter(event_type="order_placed").count() == 3 * 23


def test_an_unreadable_secret_fails_the_delivery_without_a_request(
    api, world, receiver, wall_clock
):
    hook = endpoint(api, world, receiver.url)
    WebhookEndpoint.objects.update(secret="encrypted under a key dropped too early")
    send(api, world)

    drain()

    assert receiver.received == []
    [logged] = deliveries(api, world, hook["id"])
    assert logged["status"] == "failed"
    assert logged["attempts"] == 0
    assert logged["last_error"] == "The endpoint's secret cannot be read."


def test_a_drain_records_every_batch_and_keeps_its_connections_alive(
    api, world, wall_clock, settings
):
    """Each batch's outcomes are recorded while the next one's requests are under way; the
    last one before the drain returns. One client serves every batch: its keep-alive
    connections are reused rather than opened again per batch."""
    settings.WEBHOOK_CLAIM_BATCH_SIZE = 2
    with WebhookReceiver() as keeps_alive:
        ok = endpoint(api, world, keeps_alive.url("/ok"))
        failing = endpoint(api, world, keeps_alive.url("/failing"))
        keeps_alive.answer("/failing", *[500] * 5)
        for n in range(5):
            send(api, world, idempotency_key=f"drain-{n}")
        while events_process_batch().claimed:
            pass

        claimed, more = webhook_deliver_due(budget_seconds=30)

        assert (claimed, more) == (10, False)
        assert len(keeps_alive.received) == 10
        assert keeps_alive.connections <= 2
    assert [d["status"] for d in deliveries(api, world, ok["id"])] == ["delivered"] * 5
    failed = deliveries(api, world, failing["id"])
    assert [(d["status"], d["attempts"], d["last_status_code"]) for d in failed] == [
        ("pending", 1, 500)
    ] * 5
    assert not WebhookDelivery.objects.filter(status=WorkStatus.PROCESSING).exists()
