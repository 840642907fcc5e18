"""FCM HTTP v1 against a loopback stand-in of Google's token endpoint and FCM."""

import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bench import keys
from bench.standins import FcmStandin
from pushproviders.credentials import service_account_from
from pushproviders.readiness import FcmCredentials
from pushproviders.transports import PushPayload, PushSendError, PushTarget, transport_open
from pushproviders.transports.fcm import FcmTransport

DEVICE = "fcm-device-token-0001:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"
PAYLOAD = PushPayload(title="Order shipped", body="It is on its way.", data={"order": "42"})


@pytest.fixture
def standin() -> Iterator[FcmStandin]:
    with FcmStandin(account=keys.service_account()) as server:
        yield server


@pytest.fixture
def allow_http(settings: Any, standin: FcmStandin) -> None:
    settings.PUSH_ALLOW_HTTP = True
    settings.PUSH_FCM_BASE_URL = standin.url


def credentials(token_uri: str, **changes: Any) -> FcmCredentials:
    return FcmCredentials(
        service_account_from(keys.service_account(token_uri=token_uri, **changes))
    )


@pytest.fixture
def transport(standin: FcmStandin, allow_http: None) -> Iterator[FcmTransport]:
    opened = transport_open(credentials(standin.token_uri))
    assert isinstance(opened, FcmTransport)
    yield opened
    opened.close()


def failure(transport: FcmTransport, device: str = DEVICE) -> PushSendError:
    with pytest.raises(PushSendError) as raised:
        transport.send(PushTarget(token=device), PAYLOAD)
    return raised.value


def test_messages_go_out_with_one_access_token_over_one_connection(transport, standin):
    names = [transport.send(PushTarget(token=DEVICE), PAYLOAD) for _ in range(3)]

    assert names == [f"projects/demo-app-123/messages/{n}" for n in (1, 2, 3)]
    assert standin.problems == []
    assert len(standin.issued) == 1
    assert standin.connections == 1
    assert standin.messages[0]["token"] == DEVICE
    assert standin.messages[0]["notification"] == {
        "title": "Order shipped",
        "body": "It is on its way.",
    }
    assert standin.messages[0]["data"] == {"order": "42"}


def test_collapse_key_ttl_and_priority_reach_the_android_options(transport, standin):
    payload = PushPayload(
        title="t", body="b", data={}, collapse_key="score", ttl_seconds=60, priority="normal"
    )

    transport.send(PushTarget(token=DEVICE), payload)

    assert standin.messages[0]["android"] == {
        "priority": "NORMAL",
        "collapse_key": "score",
        "ttl": "60s",
    }
    assert "data" not in standin.messages[0]


def test_the_access_token_is_shared_by_later_transports_of_the_process(transport, standin):
    transport.send(PushTarget(token=DEVICE), PAYLOAD)
    second = transport_open(credentials(standin.token_uri))
    try:
        second.send(PushTarget(token=DEVICE), PAYLOAD)
    finally:
        second.close()

    assert len(standin.issued) == 1
    assert len(standin.messages) == 2


def test_an_access_token_is_renewed_before_it_expires(settings):
    settings.PUSH_ALLOW_HTTP = True
    with FcmStandin(account=keys.service_account(), expires_in=1) as standin:
        settings.PUSH_FCM_BASE_URL = standin.url
        transport = transport_open(credentials(standin.token_uri))
        transport.send(PushTarget(token=DEVICE), PAYLOAD)
        transport.send(PushTarget(token=DEVICE), PAYLOAD)
        time.sleep(0.6)
        transport.send(PushTarget(token=DEVICE), PAYLOAD)
        transport.close()

    assert len(standin.issued) == 2
    assert standin.problems == []


def test_a_revoked_access_token_is_replaced_once_and_the_send_retried(transport, standin):
    transport.send(PushTarget(token=DEVICE), PAYLOAD)
    standin.revoke_tokens()

    name = transport.send(PushTarget(token=DEVICE), PAYLOAD)

    assert name == "projects/demo-app-123/messages/2"
    assert len(standin.issued) == 2


def test_an_unregistered_token_is_invalid_and_permanent(transport, standin):
    standin.unregistered.add(DEVICE)

    error = failure(transport)

    assert (error.code, error.invalid_token, error.permanent) == ("fcm_unregistered", True, True)


def test_a_malformed_registration_token_is_invalid(transport, standin):
    error = failure(transport, device="not a token")

    assert (error.code, error.invalid_token, error.permanent) == ("fcm_invalid_token", True, True)
    assert standin.problems == []


def test_an_unavailable_fcm_is_transient_and_says_when_to_retry(transport, standin):
    standin.fail_next(503, "UNAVAILABLE", **{"retry-after": "7"})

    error = failure(transport)

    assert (error.code, error.permanent, error.invalid_token) == ("fcm_unavailable", False, False)
    assert error.retry_after == 7.0
    assert transport.send(PushTarget(token=DEVICE), PAYLOAD) == "projects/demo-app-123/messages/1"


def test_an_exceeded_quota_is_transient(transport, standin):
    standin.fail_next(429, "RESOURCE_EXHAUSTED")

    error = failure(transport)

    assert (error.code, error.permanent) == ("fcm_throttled", False)


def test_a_failing_token_endpoint_is_transient(transport, standin):
    standin.next_token_answers.append(503)

    error = failure(transport)

    assert (error.code, error.permanent) == ("fcm_token_unavailable", False)
    assert transport.send(PushTarget(token=DEVICE), PAYLOAD)


def test_a_refused_message_is_permanent_without_touching_the_token(transport, standin):
    standin.fail_next(403, "PERMISSION_DENIED")

    error = failure(transport)

    assert (error.code, error.permanent, error.invalid_token) == ("fcm_rejected", True, False)


def test_a_service_account_the_token_endpoint_refuses_is_permanent(transport, standin, caplog):
    # Google no longer knows the account under this email: the assertion is refused.
    standin.account = {
        **standin.account,
        "client_email": "renamed@demo-app-123.iam.gserviceaccount.com",
    }

    with caplog.at_level(logging.DEBUG):
        error = failure(transport)

    assert (error.code, error.permanent) == ("fcm_credentials_rejected", True)
    assert standin.messages == []
    key_line = keys.rsa_pem().splitlines()[1]
    for text in (str(error), repr(error), repr(transport), caplog.text):
        assert key_line not in text
        assert "PRIVATE KEY" not in text


def test_no_access_token_or_device_token_appears_in_errors_or_logs(transport, standin, caplog):
    transport.send(PushTarget(token=DEVICE), PAYLOAD)
    standin.unregistered.add(DEVICE)

    with caplog.at_level(logging.DEBUG):
        error = failure(transport)

    for text in (str(error), repr(error), repr(PushTarget(token=DEVICE)), caplog.text):
        assert standin.issued[0] not in text
        assert DEVICE not in text


def test_an_unreachable_fcm_is_transient(settings, standin):
    settings.PUSH_ALLOW_HTTP = True
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    settings.PUSH_FCM_BASE_URL = f"http://127.0.0.1:{port}"
    transport = transport_open(credentials(f"http://127.0.0.1:{port}/token"))

    error = failure(transport)
    transport.close()

    assert (error.code, error.permanent) == ("provider_unreachable", False)


def test_without_allow_http_a_loopback_token_uri_is_refused_before_any_request(settings, standin):
    settings.PUSH_ALLOW_HTTP = False
    settings.PUSH_FCM_BASE_URL = "https://fcm.googleapis.com"
    transport = transport_open(credentials(standin.token_uri))

    error = failure(transport)
    transport.close()

    assert (error.code, error.permanent, error.invalid_token) == ("token_uri_refused", True, False)
    assert standin.connections == 0


@pytest.mark.parametrize(
    "token_uri",
    ["https://loopback.example.com/token", "https://intranet.example.com/token"],
)
def test_a_token_uri_resolving_to_a_non_public_address_is_refused(settings, token_uri):
    settings.PUSH_ALLOW_HTTP = False
    settings.PUSH_FCM_BASE_URL = "https://fcm.googleapis.com"
    transport = transport_open(credentials(token_uri))

    error = failure(transport)
    transport.close()

    assert (error.code, error.permanent) == ("token_uri_refused", True)


def test_without_allow_http_a_loopback_fcm_base_url_is_refused(settings, standin):
    settings.PUSH_ALLOW_HTTP = False
    settings.PUSH_FCM_BASE_URL = standin.url
    transport = transport_open(credentials("https://oauth2.googleapis.com/token"))

    error = failure(transport)
    transport.close()

    assert (error.code, error.permanent) == ("fcm_url_refused", True)
    assert standin.connections == 0
