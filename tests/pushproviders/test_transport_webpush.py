"""Web Push against a loopback push service that checks VAPID and decrypts like a browser."""

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from bench import keys
from bench.standins import BrowserSubscription, WebPushStandin
from pushproviders.readiness import WebPushCredentials
from pushproviders.transports import PushPayload, PushSendError, PushTarget, transport_open
from pushproviders.transports.webpush import MAX_PLAINTEXT_BYTES, WebPushTransport, origin_of

PAYLOAD = PushPayload(title="Order shipped", body="It is on its way.", data={"order": "42"})
SUBJECT = "mailto:push@shop.example.com"


def credentials() -> WebPushCredentials:
    private, public = keys.vapid_pair()
    return WebPushCredentials(public_key=public, private_key=private, subject=SUBJECT)


@pytest.fixture
def standin() -> Iterator[WebPushStandin]:
    with WebPushStandin(vapid_public_key=keys.vapid_pair()[1]) as server:
        yield server


@pytest.fixture
def transport(settings: Any) -> Iterator[WebPushTransport]:
    settings.PUSH_ALLOW_HTTP = True
    opened = transport_open(credentials())
    assert isinstance(opened, WebPushTransport)
    yield opened
    opened.close()


def target(subscription: BrowserSubscription) -> PushTarget:
    return PushTarget(
        token=subscription.endpoint, p256dh=subscription.p256dh, auth=subscription.auth_b64
    )


def failure(transport: Any, subscription: BrowserSubscription) -> PushSendError:
    with pytest.raises(PushSendError) as raised:
        transport.send(target(subscription), PAYLOAD)
    return raised.value


def test_the_browser_decrypts_the_notification_over_one_connection(transport, standin):
    first, second = standin.subscribe(), standin.subscribe()

    locations = [transport.send(target(s), PAYLOAD) for s in (first, second, first)]

    assert standin.problems == []
    assert (
        first.received
        == [{"title": "Order shipped", "body": "It is on its way.", "data": {"order": "42"}}] * 2
    )
    assert len(second.received) == 1
    assert locations == [f"{standin.origin}/message/{n}" for n in (1, 2, 3)]
    assert standin.connections == 1
    headers = standin.headers_seen[0]
    assert headers["content-encoding"] == "aes128gcm"
    assert headers["ttl"] == str(28 * 24 * 3600)
    assert headers["urgency"] == "high"


def test_each_message_is_encrypted_anew(transport, standin):
    subscription = standin.subscribe()

    transport.send(target(subscription), PAYLOAD)
    transport.send(target(subscription), PAYLOAD)

    first, second = standin.bodies
    assert first != second
    assert b"Order shipped" not in first
    assert subscription.received[0] == subscription.received[1]


def test_ttl_urgency_and_topic_follow_the_payload(transport, standin):
    subscription = standin.subscribe()
    payload = PushPayload(
        title="t", body="b", data={}, collapse_key="score", ttl_seconds=60, priority="normal"
    )

    transport.send(target(subscription), payload)
    transport.send(target(subscription), PushPayload(title="t", body="b", collapse_key="a b"))

    first, second = standin.headers_seen
    assert (first["ttl"], first["urgency"], first["topic"]) == ("60", "normal", "score")
    assert len(second["topic"]) == 32
    assert " " not in second["topic"]


@pytest.mark.parametrize("status", [404, 410])
def test_a_subscription_the_push_service_no_longer_has_is_invalid(transport, standin, status):
    subscription = standin.subscribe(answer=status)

    error = failure(transport, subscription)

    assert (error.code, error.invalid_token, error.permanent) == ("webpush_gone", True, True)
    assert standin.problems == []


def test_a_throttling_push_service_is_transient_and_says_when_to_retry(transport, standin):
    subscription = standin.subscribe()
    standin.fail_next(429, **{"retry-after": "120"})

    error = failure(transport, subscription)

    assert (error.code, error.permanent, error.invalid_token) == ("webpush_throttled", False, False)
    assert error.retry_after == 120.0
    assert transport.send(target(subscription), PAYLOAD)


def test_a_failing_push_service_is_transient(transport, standin):
    subscription = standin.subscribe()
    standin.fail_next(502)

    error = failure(transport, subscription)

    assert (error.code, error.permanent) == ("webpush_unavailable", False)


def test_a_push_service_that_does_not_answer_in_time_is_transient(settings):
    settings.PUSH_ALLOW_HTTP = True
    settings.PUSH_HTTP_TIMEOUT = 0.3
    slow = transport_open(credentials())
    with socket.create_server(("127.0.0.1", 0)) as silent:
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}/push/abc"
        subscription = keys.subscription(endpoint)

        with pytest.raises(PushSendError) as raised:
            slow.send(PushTarget(token=endpoint, **subscription["keys"]), PAYLOAD)
    slow.close()

    assert (raised.value.code, raised.value.permanent) == ("provider_timeout", False)


def test_a_message_the_push_service_finds_too_large_is_permanent(transport, standin):
    subscription = standin.subscribe()
    standin.fail_next(413)

    error = failure(transport, subscription)

    assert (error.code, error.permanent, error.invalid_token) == (
        "webpush_payload_too_large",
        True,
        False,
    )


def test_a_payload_past_one_record_is_refused_before_any_request(transport, standin):
    subscription = standin.subscribe()
    big = PushPayload(title="t", body="x" * MAX_PLAINTEXT_BYTES, data={})

    with pytest.raises(PushSendError) as raised:
        transport.send(target(subscription), big)

    assert (raised.value.code, raised.value.permanent) == ("webpush_payload_too_large", True)
    assert standin.requests == 0


def test_a_payload_of_the_largest_size_is_delivered(transport, standin):
    subscription = standin.subscribe()
    overhead = len(b'{"title":"t","body":"","data":{}}')
    largest = PushPayload(title="t", body="x" * (MAX_PLAINTEXT_BYTES - overhead), data={})

    transport.send(target(subscription), largest)

    assert subscription.received[0]["body"] == "x" * (MAX_PLAINTEXT_BYTES - overhead)


def test_a_subscription_made_for_another_vapid_key_is_refused_permanently(settings, caplog):
    settings.PUSH_ALLOW_HTTP = True
    with WebPushStandin(vapid_public_key=keys.vapid_key_pair_fresh()[1]) as standin:
        subscription = standin.subscribe()
        transport = transport_open(credentials())
        with caplog.at_level(logging.DEBUG):
            error = failure(transport, subscription)
        transport.close()

    assert (error.code, error.permanent, error.invalid_token) == (
        "webpush_unauthorized",
        True,
        False,
    )
    for text in (str(error), repr(error), repr(transport), caplog.text):
        assert keys.vapid_pair()[0] not in text
        assert subscription.endpoint not in text
        assert subscription.auth_b64 not in text


def test_subscription_keys_that_cannot_encrypt_make_the_subscription_invalid(transport, standin):
    subscription = standin.subscribe()
    broken = PushTarget(token=subscription.endpoint, p256dh="AAAA", auth=subscription.auth_b64)

    with pytest.raises(PushSendError) as raised:
        transport.send(broken, PAYLOAD)

    assert (raised.value.code, raised.value.invalid_token) == ("webpush_keys_invalid", True)
    assert standin.requests == 0


def test_the_request_goes_to_the_address_the_guard_checked(settings):
    # Only the test resolver knows loopback.example.com (127.0.0.1): delivery proves the
    # connection used the checked address instead of resolving again.
    settings.PUSH_ALLOW_HTTP = True
    with WebPushStandin(
        vapid_public_key=keys.vapid_pair()[1], host="loopback.example.com"
    ) as standin:
        subscription = standin.subscribe()
        transport = transport_open(credentials())
        transport.send(target(subscription), PAYLOAD)
        transport.close()

    assert standin.problems == []
    assert len(subscription.received) == 1


def test_without_allow_http_a_loopback_endpoint_is_refused_before_any_request(settings, standin):
    settings.PUSH_ALLOW_HTTP = False
    subscription = standin.subscribe()
    transport = transport_open(credentials())

    error = failure(transport, subscription)
    transport.close()

    assert (error.code, error.permanent, error.invalid_token) == ("endpoint_refused", True, False)
    assert standin.connections == 0


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://loopback.example.com/push/abc",
        "https://intranet.example.com/push/abc",
        "https://metadata.example.com/push/abc",
    ],
)
def test_an_endpoint_resolving_to_a_non_public_address_is_refused(settings, endpoint):
    settings.PUSH_ALLOW_HTTP = False
    subscription = keys.subscription(endpoint)
    transport = transport_open(credentials())

    with pytest.raises(PushSendError) as raised:
        transport.send(PushTarget(token=endpoint, **subscription["keys"]), PAYLOAD)
    transport.close()

    assert (raised.value.code, raised.value.permanent) == ("endpoint_refused", True)


def test_an_endpoint_whose_host_does_not_resolve_now_is_transient(settings):
    endpoint = "https://gone.example.com/push/abc"
    subscription = keys.subscription(endpoint)
    transport = transport_open(credentials())

    with pytest.raises(PushSendError) as raised:
        transport.send(PushTarget(token=endpoint, **subscription["keys"]), PAYLOAD)
    transport.close()

    assert (raised.value.code, raised.value.permanent) == ("endpoint_unresolved", False)


def test_the_vapid_audience_is_the_endpoint_origin():
    assert origin_of("https://fcm.googleapis.com/fcm/send/abc") == "https://fcm.googleapis.com"
    assert origin_of("https://push.example.net:443/x") == "https://push.example.net"
    assert origin_of("https://push.example.net:8443/x") == "https://push.example.net:8443"
    assert origin_of("http://[::1]:8080/x") == "http://[::1]:8080"
