"""APNs over HTTP/2 with token-based authentication: an ES256 provider token (kid = key
id, iss = team id) reused for most of its hour, one reused HTTP/2 connection per batch.

https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns
"""

import hashlib
import re
import threading
import time
import uuid
from typing import Any

import httpx
import jwt
import orjson

from config.net.guardedhttp import Answer, Target
from pushproviders import conf
from pushproviders.models import ApnsEnvironment
from pushproviders.readiness import ApnsCredentials
from pushproviders.transports.base import (
    PushPayload,
    PushTarget,
    invalid_token,
    permanent,
    transient,
)
from pushproviders.transports.http import guarded_client, provider_reached, url_guarded_parsed

BASE_URLS = {
    ApnsEnvironment.PRODUCTION: "https://api.push.apple.com",
    ApnsEnvironment.SANDBOX: "https://api.sandbox.push.apple.com",
}
# Apple accepts a provider token for an hour and refuses new ones more often than every
# 20 minutes (TooManyProviderTokenUpdates): renew after 50.
TOKEN_RENEW_SECONDS = 50 * 60
DEVICE_TOKEN = re.compile(r"^[0-9a-fA-F]{64,200}$")
COLLAPSE_ID_MAX_BYTES = 64
# Reasons that say the device token will never be delivered to again under this topic.
DEAD_TOKEN_REASONS = {"BadDeviceToken", "DeviceTokenNotForTopic", "Unregistered"}
PROVIDER = "APNs"


class ProviderTokens:
    """Provider tokens per (team, key), shared by the process's threads."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(credentials: ApnsCredentials) -> tuple[str, str, str]:
        digest = hashlib.sha256(credentials.private_key_pem.encode()).hexdigest()
        return (credentials.team_id, credentials.key_id, digest)

    def get(
        self,
        credentials: ApnsCredentials,
        *,
        rejected: str | None = None,
        key: tuple[str, str, str] | None = None,
    ) -> str:
        """The token to send with; a new one when the cached one is old or is `rejected`
        (unless another thread already replaced it). `key` is `key(credentials)` when the
        caller keeps it (hashing the key on every send costs more than the look-up)."""
        key = key or self.key(credentials)
        with self._lock:
            cached = self._tokens.get(key)
            if cached is not None:
                token, issued_at = cached
                if token != rejected and time.monotonic() - issued_at < TOKEN_RENEW_SECONDS:
                    return token
            token = _provider_token(credentials)
            self._tokens[key] = (token, time.monotonic())
            return token

    def clear(self) -> None:
        with self._lock:
            self._tokens.clear()


provider_tokens = ProviderTokens()


def _provider_token(credentials: ApnsCredentials) -> str:
    try:
        return jwt.encode(
            {"iss": credentials.team_id, "iat": int(time.time())},
            credentials.private_key_pem,
            algorithm="ES256",
            headers={"kid": credentials.key_id},
        )
    except (ValueError, TypeError, jwt.PyJWTError):
        raise permanent("apns_credentials_invalid", "The APNs key cannot sign.") from None


def base_url(credentials: ApnsCredentials) -> str:
    configured = conf.apns_base_url()
    return configured or BASE_URLS.get(
        ApnsEnvironment(credentials.environment), BASE_URLS[ApnsEnvironment.PRODUCTION]
    )


def collapse_id(key: str) -> str:
    """`key` when it fits apns-collapse-id (64 bytes), else a digest of it that does."""
    if len(key.encode()) <= COLLAPSE_ID_MAX_BYTES:
        return key
    return hashlib.sha256(key.encode()).hexdigest()


def notification_body(payload: PushPayload) -> bytes:
    # Custom data sits beside `aps`, which the data cannot replace.
    body: dict[str, Any] = {
        **payload.data,
        "aps": {"alert": {"title": payload.title, "body": payload.body}},
    }
    # Compact UTF-8 JSON, as json.dumps(separators=(",", ":"), ensure_ascii=False).
    return orjson.dumps(body)


class ApnsTransport:
    """Sends for one app (bundle id) over one HTTP/2 connection to APNs."""

    def __init__(self, credentials: ApnsCredentials) -> None:
        self.credentials = credentials
        # HTTP/2 only: ALPN h2 over TLS, prior knowledge over cleartext (loopback tests).
        # The device path and the apns-id differ on every request: indexed, they would
        # push the headers that repeat out of the connection's HPACK table.
        self.client = guarded_client(http1=False, http2=True, unindexed=(b":path", b"apns-id"))
        self.token_key = ProviderTokens.key(credentials)
        # The checked base URL, parsed once per transport (per base URL setting).
        self._base: tuple[str, httpx.URL] | None = None
        # The authorization header of the provider token last sent with.
        self._authorization: tuple[str, bytes] = ("", b"")
        self._topic = credentials.bundle_id.encode()

    def __repr__(self) -> str:
        return f"ApnsTransport(bundle_id={self.credentials.bundle_id!r})"

    def send(self, target: PushTarget, payload: PushPayload) -> str:
        if not DEVICE_TOKEN.fullmatch(target.token):
            raise invalid_token("apns_bad_device_token", "The device token is not hex.")
        # A hex token: the path names no other host and needs no quoting.
        url = self.client.at(self._base_url(), f"/3/device/{target.token}")
        body = notification_body(payload)
        apns_id = str(uuid.uuid4())
        headers = self._headers(payload, apns_id)
        token = provider_tokens.get(self.credentials, key=self.token_key)
        response = self._post(url, body, headers, token)
        if response.status_code == httpx.codes.FORBIDDEN and (
            _reason(response) == "ExpiredProviderToken"
        ):
            token = provider_tokens.get(self.credentials, rejected=token, key=self.token_key)
            response = self._post(url, body, headers, token)
        return self._outcome(response, apns_id)

    def close(self) -> None:
        self.client.close()

    def _base_url(self) -> httpx.URL:
        base = base_url(self.credentials)
        if self._base is None or self._base[0] != base:
            self._base = (base, url_guarded_parsed(self.client, base, what="apns_url"))
        return self._base[1]

    def _headers(self, payload: PushPayload, apns_id: str) -> list[tuple[bytes, bytes]]:
        headers = [
            (b"apns-id", apns_id.encode()),
            (b"apns-topic", self._topic),
            (b"apns-push-type", b"alert"),
            (b"apns-priority", b"10" if payload.priority == "high" else b"5"),
        ]
        if payload.ttl_seconds is not None:
            # 0 = deliver now or never; otherwise the time APNs stops trying.
            expires = 0 if payload.ttl_seconds <= 0 else int(time.time()) + payload.ttl_seconds
            headers.append((b"apns-expiration", str(expires).encode()))
        if payload.collapse_key:
            headers.append((b"apns-collapse-id", collapse_id(payload.collapse_key).encode()))
        return headers

    def _post(
        self, url: Target, body: bytes, headers: list[tuple[bytes, bytes]], token: str
    ) -> Answer:
        if self._authorization[0] != token:
            self._authorization = (token, f"bearer {token}".encode())
        with provider_reached(PROVIDER):
            return self.client.post(
                url,
                content=body,
                headers=[
                    *headers,
                    (b"authorization", self._authorization[1]),
                    (b"content-type", b"application/json"),
                ],
            )

    @staticmethod
    def _outcome(response: Answer, sent_id: str) -> str:
        status = response.status_code
        if status == httpx.codes.OK:
            return response.header("apns-id") or sent_id
        reason = _reason(response)
        said = f"APNs answered {status} {reason}".rstrip() + "."
        if status == httpx.codes.GONE or (
            status == httpx.codes.BAD_REQUEST and reason in DEAD_TOKEN_REASONS
        ):
            code = "apns_unregistered" if status == httpx.codes.GONE else "apns_bad_device_token"
            raise invalid_token(code, said)
        retry_after = response.header("retry-after")
        if status == httpx.codes.TOO_MANY_REQUESTS:
            raise transient("apns_throttled", said, retry_after)
        if status >= httpx.codes.INTERNAL_SERVER_ERROR:
            raise transient("apns_unavailable", said, retry_after)
        if status == httpx.codes.FORBIDDEN:
            raise permanent("apns_forbidden", said)
        raise permanent("apns_rejected", said)


def _reason(response: Answer) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    reason = body.get("reason") if isinstance(body, dict) else None
    return reason[:100] if isinstance(reason, str) else ""
