"""Outbound webhooks on the running product: endpoints made through the API receive, at a
loopback receiver in the test process, the customer and system events they subscribe to,
each once and signed (verified with the Standard Webhooks library and the endpoint's
secret); a failed attempt is retried, a worker killed mid-delivery has the delivery sent
again by another, and a replay sends it again, always with the same `webhook-id`. The
stacks run with WEBHOOKS_ALLOW_HTTP and short retries and leases (`outside_urls`)."""

from collections.abc import Iterator
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from bench.webhook_receiver import Received, WebhookReceiver
from tests.e2e.client import Api, settle, unique, until, until_value
from tests.e2e.stack import ProductionStack, Stack

# How long a delivery that came has to show a second copy, were there one.
SETTLE_SECONDS = 3
# A killed worker's claim is taken over once its lease (WEBHOOK_LEASE_SECONDS, 12) ran out,
# by the next sweep (every 10 s).
TAKEOVER_SECONDS = 60


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as server:
        yield server


def endpoint(api: Api, receiver: WebhookReceiver, path: str, *types: str) -> dict[str, Any]:
    """A new endpoint at `path` on the receiver, subscribed to `types`; with its secret."""
    body = {"url": receiver.url(path), "event_types": list(types)}
    created: dict[str, Any] = api.post("/webhook-endpoints", body, status=201)
    return created


def verified(secret: str, request: Received) -> Any:
    """The body of a request whose signature the endpoint's secret verifies."""
    return Webhook(secret).verify(request.body, request.headers)


def arrivals(receiver: WebhookReceiver, path: str, count: int) -> list[Received]:
    return until(
        lambda: receiver.to(path) if len(receiver.to(path)) >= count else None,
        f"{count} requests to {path}",
    )


def deliveries(api: Api, endpoint_id: str) -> list[dict[str, Any]]:
    return list(api.get(f"/webhook-endpoints/{endpoint_id}/deliveries", limit=100))


def delivered(api: Api, endpoint_id: str, count: int) -> list[dict[str, Any]]:
    return until_value(
        lambda: deliveries(api, endpoint_id),
        lambda log: len(log) == count and all(d["status"] == "delivered" for d in log),
        f"{count} deliveries delivered",
    )


def test_customer_and_system_events_are_each_delivered_once_signed(
    topology: Stack, api: Api, receiver: WebhookReceiver
) -> None:
    path, name = f"/{unique('both-')}", unique("order_paid_")
    email = f"{unique('hook-')}@example.com"
    hook = endpoint(api, receiver, path, name, "sendrealm.contact.created")

    contact_id = api.contact(email, plan="pro")
    api.event(name, email, total=42)

    arrived = arrivals(receiver, path, 2)
    settle(lambda: len(receiver.to(path)) > 2, seconds=SETTLE_SECONDS)
    assert len(receiver.to(path)) == 2
    bodies = {body["type"]: body for body in (verified(hook["secret"], r) for r in arrived)}
    assert set(bodies) == {name, "sendrealm.contact.created"}
    assert bodies["sendrealm.contact.created"]["data"]["contact_id"] == contact_id
    assert bodies[name]["data"]["contact_id"] == contact_id
    assert bodies[name]["data"]["payload"] == {"total": 42}
    assert len({request.webhook_id for request in arrived}) == 2
    assert all(request.headers["user-agent"] == "Sendrealm-Webhooks/1.0" for request in arrived)
    log = delivered(api, hook["id"], 2)
    assert {d["webhook_id"] for d in log} == {request.webhook_id for request in arrived}
    assert [d["attempts"] for d in log] == [1, 1]


def test_a_failed_attempt_is_retried_with_the_same_webhook_id(
    topology: Stack, api: Api, receiver: WebhookReceiver
) -> None:
    path, name = f"/{unique('retry-')}", unique("order_failed_")
    hook = endpoint(api, receiver, path, name)
    receiver.answer(path, 500)

    api.event(name, f"{unique('retry-')}@example.com")

    first, retry = arrivals(receiver, path, 2)
    assert first.webhook_id == retry.webhook_id
    assert first.body == retry.body
    assert verified(hook["secret"], first) == verified(hook["secret"], retry)
    [log] = delivered(api, hook["id"], 1)
    assert (log["attempts"], log["last_status_code"], log["last_error"]) == (2, 200, None)
    assert log["webhook_id"] == first.webhook_id


@pytest.mark.parametrize("topology", ["production"], indirect=True)
def test_a_delivery_held_by_a_killed_worker_is_sent_again_with_the_same_webhook_id(
    topology: Stack, api: Api, receiver: WebhookReceiver
) -> None:
    # make_run's workers are run.py's children, which it would not start again alone.
    assert isinstance(topology, ProductionStack)
    path, name = f"/{unique('held-')}", unique("order_held_")
    hook = endpoint(api, receiver, path, name)
    receiver.hold(path)

    api.event(name, f"{unique('held-')}@example.com")
    [held] = arrivals(receiver, path, 1)
    # The sending worker is mid-request now: it waits for the receiver's answer.
    killed = topology.kill_and_restart_workers()
    receiver.release(path)

    assert killed == ["worker1", "worker2"]
    requests = until(
        lambda: receiver.to(path) if len(receiver.to(path)) >= 2 else None,
        "the delivery sent again after the kill",
        seconds=TAKEOVER_SECONDS,
    )
    assert {request.webhook_id for request in requests} == {held.webhook_id}
    assert {request.body for request in requests} == {held.body}
    for request in requests:
        verified(hook["secret"], request)
    [log] = until_value(
        lambda: deliveries(api, hook["id"]),
        lambda log: [d["status"] for d in log] == ["delivered"],
        "the delivery delivered after the kill",
        seconds=TAKEOVER_SECONDS,
    )
    assert log["webhook_id"] == held.webhook_id


def test_a_replayed_delivery_arrives_again_with_the_same_webhook_id(
    topology: Stack, api: Api, receiver: WebhookReceiver
) -> None:
    path, name = f"/{unique('replay-')}", unique("order_replayed_")
    hook = endpoint(api, receiver, path, name)
    api.event(name, f"{unique('replay-')}@example.com")
    [first] = arrivals(receiver, path, 1)
    [log] = delivered(api, hook["id"], 1)

    replayed = api.post(f"/webhook-deliveries/{log['id']}/actions/replay", status=202)

    assert replayed["status"] == "pending"
    first_again, again = arrivals(receiver, path, 2)
    assert first_again == first
    assert again.webhook_id == first.webhook_id
    assert verified(hook["secret"], again) == verified(hook["secret"], first)
    [log] = until_value(
        lambda: deliveries(api, hook["id"]),
        lambda log: log[0]["status"] == "delivered" and log[0]["attempts"] == 2,
        "the replay delivered",
    )
    assert log["webhook_id"] == first.webhook_id
