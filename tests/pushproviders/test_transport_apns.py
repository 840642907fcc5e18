"""APNs over HTTP/2 against a loopback h2 stand-in (cleartext, prior knowledge)."""

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bench import keys
from bench.standins import ApnsStandin
from config.libinternals import h2_encoders
from pushproviders.readiness import ApnsCredentials
from pushproviders.transports import PushPayload, PushSendError, PushTarget, apns, transport_open
from pushproviders.transports.apns import ApnsTransport

DEVICE = "a1" * 32
OTHER_DEVICE = "b2" * 32
PAYLOAD = PushPayload(title="Order shipped", body="It is on its way.", data={"order": "42"})


def credentials(environment: str = "production", **changes: Any) -> ApnsCredentials:
    values = {
        "key_id": "ABC123DEFG",
        "team_id": "TEAM123456",
        "private_key_pem": keys.apns_p8(),
        "bundle_id": "com.example.shop",
        "environment": environment,
        **changes,
    }
    return ApnsCredentials(**values)


@pytest.fixture
def standin() -> Iterator[ApnsStandin]:
    with ApnsStandin(
        private_key_pem=keys.apns_p8(),
        key_id="ABC123DEFG",
        team_id="TEAM123456",
        bundle_id="com.example.shop",
    ) as server:
        yield server


@pytest.fixture
def allow_http(settings: Any, standin: ApnsStandin) -> None:
    settings.PUSH_ALLOW_HTTP = True
    settings.PUSH_APNS_BASE_URL = standin.url


@pytest.fixture
def transport(allow_http: None) -> Iterator[ApnsTransport]:
    opened = transport_open(credentials())
    assert isinstance(opened, ApnsTransport)
    yield opened
    opened.close()


def test_device_paths_and_ids_stay_out_of_the_connection_s_header_table(transport, standin):
    for device in (DEVICE, OTHER_DEVICE, DEVICE, OTHER_DEVICE):
        transport.send(PushTarget(token=device), PAYLOAD)

    assert standin.problems == []
    assert len(standin.delivered) == 4
    [encoder] = h2_encoders(transport.client._pool)
    table = encoder.header_table
    entries = [(name, value) for name, value in table.dynamic_entries]
    # Only the first request, sent before httpcore let the connection be tuned, added its.
    assert [value for name, value in entries if name == b":path"] == [
        f"/3/device/{DEVICE}".encode()
    ]
    assert len([name for name, _ in entries if name == b"apns-id"]) == 1
    assert (b"apns-topic", b"com.example.shop") in entries


def failure(transport: Any, device: str = DEVICE) -> PushSendError:
    with pytest.raises(PushSendError) as raised:
        transport.send(PushTarget(token=device), PAYLOAD)
    return raised.value


def test_notifications_share_one_http2_connection_and_one_provider_token(transport, standin):
    ids = [transport.send(PushTarget(token=device), PAYLOAD) for device in (DEVICE, OTHER_DEVICE)]
    ids.append(transport.send(PushTarget(token=DEVICE), PAYLOAD))

    assert standin.problems == []
    assert standin.connections == 1
    assert len(standin.provider_tokens) == 1
    assert [r.headers[":path"] for r in standin.delivered] == [
        f"/3/device/{DEVICE}",
        f"/3/device/{OTHER_DEVICE}",
        f"/3/device/{DEVICE}",
    ]
    assert ids == [r.headers["apns-id"] for r in standin.delivered]
    assert len(set(ids)) == 3
    first = standin.delivered[0]
    assert first.headers["apns-topic"] == "com.example.shop"
    assert first.headers["apns-push-type"] == "alert"
    assert first.headers["apns-priority"] == "10"
    assert json.loads(first.body) == {
        "aps": {"alert": {"title": "Order shipped", "body": "It is on its way."}},
        "order": "42",
    }


def test_expiry_collapse_id_and_normal_priority_become_apns_headers(transport, standin):
    payload = PushPayload(
        title="t", body="b", data={}, collapse_key="score", ttl_seconds=60, priority="normal"
    )

    transport.send(PushTarget(token=DEVICE), payload)

    headers = standin.delivered[0].headers
    assert headers["apns-priority"] == "5"
    assert headers["apns-collapse-id"] == "score"
    assert 0 < int(headers["apns-expiration"]) - time.time() <= 60


def test_data_cannot_replace_the_aps_dictionary(transport, standin):
    transport.send(
        PushTarget(token=DEVICE), PushPayload(title="t", body="b", data={"aps": "overwritten"})
    )

    assert json.loads(standin.delivered[0].body)["aps"] == {"alert": {"title": "t", "body": "b"}}


def test_the_provider_token_is_reused_by_later_transports_of_the_process(transport, standin):
    transport.send(PushTarget(token=DEVICE), PAYLOAD)
    second = transport_open(credentials())
    try:
        second.send(PushTarget(token=DEVICE), PAYLOAD)
    finally:
        second.close()

    assert len(standin.provider_tokens) == 1
    assert standin.connections == 2


def test_an_old_provider_token_is_replaced(transport, standin, monkeypatch):
    transport.send(PushTarget(token=DEVICE), PAYLOAD)
    monkeypatch.setattr(apns, "TOKEN_RENEW_SECONDS", 0)
    time.sleep(1.1)  # a new token has a later `iat`, so it differs from the first

    transport.send(PushTarget(token=DEVICE), PAYLOAD)

    assert len(standin.provider_tokens) == 2
    assert standin.connections == 1


def test_an_expired_provider_token_is_replaced_once_and_the_send_retried(transport, standin):
    transport.send(PushTarget(token=DEVICE), PAYLOAD)
    standin.expire_current_token()
    time.sleep(1.1)

    apns_id = transport.send(PushTarget(token=DEVICE), PAYLOAD)

    assert apns_id == standin.delivered[1].headers["apns-id"]
    assert len(standin.provider_tokens) == 2


def test_an_unregistered_device_is_invalid(transport, standin):
    standin.unregistered.add(DEVICE)

    error = failure(transport)

    assert (error.code, error.invalid_token, error.permanent) == ("apns_unregistered", True, True)


@pytest.mark.parametrize("reason", ["BadDeviceToken", "DeviceTokenNotForTopic"])
def test_a_device_token_apns_calls_bad_is_invalid(transport, standin, reason):
    standin.fail_next(400, reason)

    error = failure(transport)

    assert (error.code, error.invalid_token, error.permanent) == (
        "apns_bad_device_token",
        True,
        True,
    )
    assert reason in str(error)


def test_an_unavailable_apns_is_transient_and_the_connection_stays(transport, standin):
    standin.fail_next(503, "ServiceUnavailable", **{"retry-after": "30"})

    error = failure(transport)
    transport.send(PushTarget(token=DEVICE), PAYLOAD)

    assert (error.code, error.permanent, error.invalid_token) == ("apns_unavailable", False, False)
    assert error.retry_after == 30.0
    assert standin.connections == 1


def test_too_many_requests_for_a_device_is_transient(transport, standin):
    standin.fail_next(429, "TooManyRequests")

    error = failure(transport)

    assert (error.code, error.permanent) == ("apns_throttled", False)


def test_a_key_apple_does_not_know_is_permanent_and_keeps_the_device(allow_http, standin, caplog):
    transport = transport_open(credentials(private_key_pem=keys.p256_pem()))

    with caplog.at_level(logging.DEBUG):
        error = failure(transport)
    transport.close()

    assert (error.code, error.permanent, error.invalid_token) == ("apns_forbidden", True, False)
    assert "InvalidProviderToken" in str(error)
    for text in (str(error), repr(transport), caplog.text):
        assert "PRIVATE KEY" not in text
        assert DEVICE not in text


def test_a_device_token_that_is_not_hex_fails_before_any_request(transport, standin):
    error = failure(transport, device="../../2/push")

    assert (error.code, error.invalid_token) == ("apns_bad_device_token", True)
    assert standin.connections == 0


def test_without_allow_http_a_loopback_apns_url_is_refused_before_any_request(settings, standin):
    settings.PUSH_ALLOW_HTTP = False
    settings.PUSH_APNS_BASE_URL = standin.url
    transport = transport_open(credentials())

    error = failure(transport)
    transport.close()

    assert (error.code, error.permanent, error.invalid_token) == ("apns_url_refused", True, False)
    assert standin.connections == 0


def test_the_apns_host_follows_the_environment_unless_configured(settings):
    settings.PUSH_APNS_BASE_URL = ""

    assert apns.base_url(credentials("production")) == "https://api.push.apple.com"
    assert apns.base_url(credentials("sandbox")) == "https://api.sandbox.push.apple.com"
    settings.PUSH_APNS_BASE_URL = "https://apns.example.net"
    assert apns.base_url(credentials("sandbox")) == "https://apns.example.net"
