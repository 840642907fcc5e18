"""Web Push (RFC 8030) with VAPID (RFC 8292) and aes128gcm message encryption (RFC 8291).

pywebpush encrypts (ECDH with the subscription's p256dh, its auth secret, a new key per
message); the request goes through the batch's guarded client to the subscription's own
endpoint, checked against the URL guard first.
"""

import hashlib
import json
import re
import time

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from pywebpush import WebPusher

from pushproviders.credentials import b64url, b64url_decoded
from pushproviders.readiness import WebPushCredentials
from pushproviders.transports.base import (
    PushPayload,
    PushTarget,
    invalid_token,
    permanent,
    transient,
)
from pushproviders.transports.http import guarded_client, provider_reached, url_guarded

# Push services must accept 4096 bytes of encrypted body (RFC 8030 section 7.2); one
# aes128gcm record adds 86 bytes of header, 16 of tag and 1 of padding delimiter.
MAX_PLAINTEXT_BYTES = 4096 - 86 - 16 - 1
# Without a ttl_seconds the push service keeps the message as long as FCM does by default.
DEFAULT_TTL_SECONDS = 4 * 7 * 24 * 3600
# A VAPID token may live at most 24 hours (RFC 8292 section 2); it is renewed well before.
VAPID_TOKEN_SECONDS = 12 * 3600
VAPID_RENEW_SECONDS = 3600
TOPIC = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
PROVIDER = "The push service"


def origin_of(url: str) -> str:
    """The endpoint's origin (scheme, host, port unless the default): the VAPID `aud`."""
    parsed = httpx.URL(url)
    host = parsed.raw_host.decode("ascii")
    if ":" in host:
        host = f"[{host}]"
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{host}{port}"


def topic_of(key: str) -> str:
    """`key` when it is a valid Topic (32 base64url characters at most), else a digest."""
    if TOPIC.fullmatch(key):
        return key
    return b64url(hashlib.sha256(key.encode()).digest())[:32]


def plaintext(payload: PushPayload) -> bytes:
    body = {"title": payload.title, "body": payload.body, "data": dict(payload.data)}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


class WebPushTransport:
    """Sends with one VAPID key pair; connections are reused per push service host."""

    def __init__(self, credentials: WebPushCredentials) -> None:
        self.public_key = credentials.public_key
        self.subject = credentials.subject
        scalar = int.from_bytes(b64url_decoded(credentials.private_key), "big")
        self._signing_key = ec.derive_private_key(scalar, ec.SECP256R1())
        self._vapid: dict[str, tuple[str, float]] = {}
        self.client = guarded_client()

    def __repr__(self) -> str:
        return f"WebPushTransport(public_key={self.public_key!r})"

    def send(self, target: PushTarget, payload: PushPayload) -> str:
        url = url_guarded(self.client, target.token, what="endpoint")
        body = plaintext(payload)
        if len(body) > MAX_PLAINTEXT_BYTES:
            raise permanent(
                "webpush_payload_too_large",
                f"The notification is {len(body)} bytes; Web Push carries "
                f"{MAX_PLAINTEXT_BYTES} at most.",
            )
        encrypted = self._encrypted(target, body)
        ttl = DEFAULT_TTL_SECONDS if payload.ttl_seconds is None else payload.ttl_seconds
        headers = {
            "authorization": f"vapid t={self._vapid_token(origin_of(url))}, k={self.public_key}",
            "content-encoding": "aes128gcm",
            "content-type": "application/octet-stream",
            "ttl": str(max(0, ttl)),
            "urgency": "high" if payload.priority == "high" else "normal",
        }
        if payload.collapse_key:
            headers["topic"] = topic_of(payload.collapse_key)
        with provider_reached(PROVIDER):
            response = self.client.http.post(url, content=encrypted, headers=headers)
        return self._outcome(response)

    def close(self) -> None:
        self.client.close()

    @staticmethod
    def _encrypted(target: PushTarget, body: bytes) -> bytes:
        if not target.p256dh or not target.auth:
            raise invalid_token("webpush_keys_missing", "The subscription has no keys.")
        subscription = {
            "endpoint": target.token,
            "keys": {"p256dh": target.p256dh, "auth": target.auth},
        }
        try:
            encoded = WebPusher(subscription).encode(body, content_encoding="aes128gcm")
        except Exception:
            # pywebpush and http_ece raise several kinds for keys that are not a P-256
            # point and 16 bytes: this subscription can never be written to.
            raise invalid_token(
                "webpush_keys_invalid", "The subscription's keys cannot encrypt."
            ) from None
        encrypted = encoded["body"]
        assert isinstance(encrypted, bytes)
        return encrypted

    def _vapid_token(self, origin: str) -> str:
        cached = self._vapid.get(origin)
        now = time.time()
        if cached is not None and now - cached[1] < VAPID_RENEW_SECONDS:
            return cached[0]
        token = jwt.encode(
            {"aud": origin, "exp": int(now) + VAPID_TOKEN_SECONDS, "sub": self.subject},
            self._signing_key,
            algorithm="ES256",
        )
        self._vapid[origin] = (token, now)
        return token

    @staticmethod
    def _outcome(response: httpx.Response) -> str:
        status = response.status_code
        if httpx.codes.is_success(status):
            location: str = response.headers.get("location", "")
            return location
        said = f"The push service answered {status}."
        if status in (httpx.codes.NOT_FOUND, httpx.codes.GONE):
            raise invalid_token("webpush_gone", said)
        retry_after = response.headers.get("retry-after")
        if status == httpx.codes.TOO_MANY_REQUESTS:
            raise transient("webpush_throttled", said, retry_after)
        if status >= httpx.codes.INTERNAL_SERVER_ERROR:
            raise transient("webpush_unavailable", said, retry_after)
        if status == httpx.codes.REQUEST_ENTITY_TOO_LARGE:
            raise permanent("webpush_payload_too_large", said)
        if status in (httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN):
            raise permanent("webpush_unauthorized", f"{said} The VAPID key was refused.")
        raise permanent("webpush_rejected", said)
