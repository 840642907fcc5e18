"""FCM HTTP v1: an OAuth access token from the service account (a signed JWT exchanged at
the account's own token_uri, cached per process), then one POST per message.

https://firebase.google.com/docs/reference/fcm/rest/v1/projects.messages
"""

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import jwt
import orjson

from config.net.guardedhttp import Answer
from pushproviders import conf
from pushproviders.credentials import ServiceAccount
from pushproviders.readiness import FcmCredentials
from pushproviders.transports.base import (
    PushPayload,
    PushTarget,
    invalid_token,
    permanent,
    transient,
)
from pushproviders.transports.http import (
    guarded_client,
    provider_reached,
    url_guarded,
    url_guarded_parsed,
)

SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ASSERTION_SECONDS = 3600
# A cached access token is renewed this long before it expires, so a send never carries
# one that runs out in flight.
RENEW_MARGIN_SECONDS = 300
PROVIDER = "FCM"


@dataclass(frozen=True)
class _AccessToken:
    value: str
    renew_at: float  # time.monotonic()

    def __repr__(self) -> str:
        return "_AccessToken(…)"


class AccessTokens:
    """Access tokens per (client_email, token_uri, key), shared by the process's threads;
    one fetch at a time per account, others wait for its result."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str, str], _AccessToken] = {}
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(account: ServiceAccount) -> tuple[str, str, str]:
        digest = hashlib.sha256(account.private_key_pem.encode()).hexdigest()
        return (account.client_email, account.token_uri, digest)

    def get(self, key: tuple[str, str, str], fetch: Callable[[], tuple[str, float]]) -> str:
        """The cached token, or a new one from `fetch` -> (token, expires_in seconds)."""
        # Most calls find a live token: read without the locks (a dict read is atomic, and
        # an entry is replaced whole), which cost more than the rest of the look-up.
        token = self._tokens.get(key)
        if token is not None and token.renew_at > time.monotonic():
            return token.value
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            token = self._tokens.get(key)
            if token is not None and token.renew_at > time.monotonic():
                return token.value
            value, expires_in = fetch()
            margin = min(RENEW_MARGIN_SECONDS, expires_in / 2)
            self._tokens[key] = _AccessToken(value, time.monotonic() + expires_in - margin)
            return value

    def drop(self, key: tuple[str, str, str], value: str) -> None:
        """Forgets `value` (the provider refused it), unless another thread replaced it."""
        with self._lock:
            token = self._tokens.get(key)
            if token is not None and token.value == value:
                del self._tokens[key]

    def clear(self) -> None:
        with self._lock:
            self._tokens.clear()


access_tokens = AccessTokens()


def _error_of(response: Answer) -> tuple[str, str, str, list[str]]:
    """FCM's error: (status, FcmError errorCode, message, fields it names)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return "", "", "", []
    code = ""
    fields: list[str] = []
    for detail in error.get("details") or []:
        if not isinstance(detail, dict):
            continue
        kind = str(detail.get("@type", ""))
        if kind.endswith("google.firebase.fcm.v1.FcmError"):
            code = str(detail.get("errorCode", ""))
        elif kind.endswith("google.rpc.BadRequest"):
            for violation in detail.get("fieldViolations") or []:
                if isinstance(violation, dict):
                    fields.append(str(violation.get("field", "")))
    return str(error.get("status", "")), code, str(error.get("message", ""))[:200], fields


def _about_token(message: str, fields: list[str]) -> bool:
    return "message.token" in fields or "registration token" in message.lower()


def message_body(target: PushTarget, payload: PushPayload) -> dict[str, Any]:
    message: dict[str, Any] = {
        "token": target.token,
        "notification": {"title": payload.title, "body": payload.body},
    }
    if payload.data:
        message["data"] = dict(payload.data)
    android: dict[str, Any] = {"priority": "HIGH" if payload.priority == "high" else "NORMAL"}
    if payload.collapse_key:
        android["collapse_key"] = payload.collapse_key
    if payload.ttl_seconds is not None:
        android["ttl"] = f"{payload.ttl_seconds}s"
    message["android"] = android
    return {"message": message}


class FcmTransport:
    """Sends through one project's service account over one reused connection."""

    def __init__(self, credentials: FcmCredentials) -> None:
        self.account = credentials.service_account
        self.client = guarded_client()
        self.key = AccessTokens.key(self.account)
        # The checked send URL, parsed once per transport (per base URL setting).
        self._url: tuple[str, httpx.URL] | None = None
        # The authorization header of the access token last sent with.
        self._authorization: tuple[str, bytes] = ("", b"")

    def __repr__(self) -> str:
        return f"FcmTransport(project_id={self.account.project_id!r})"

    def send(self, target: PushTarget, payload: PushPayload) -> str:
        url = self._send_url()
        body = orjson.dumps(message_body(target, payload))
        token = access_tokens.get(self.key, self._token_fetched)
        response = self._post(url, body, token)
        if response.status_code == httpx.codes.UNAUTHORIZED:
            # Revoked or rotated early: one new token, one more try.
            access_tokens.drop(self.key, token)
            token = access_tokens.get(self.key, self._token_fetched)
            response = self._post(url, body, token)
        return self._outcome(response)

    def close(self) -> None:
        self.client.close()

    def _send_url(self) -> httpx.URL:
        base = conf.fcm_base_url()
        if self._url is None or self._url[0] != base:
            project = quote(self.account.project_id, safe="")
            url = url_guarded_parsed(
                self.client, f"{base}/v1/projects/{project}/messages:send", what="fcm_url"
            )
            self._url = (base, url)
        return self._url[1]

    def _post(self, url: httpx.URL, body: bytes, token: str) -> Answer:
        if self._authorization[0] != token:
            self._authorization = (token, f"Bearer {token}".encode())
        with provider_reached(PROVIDER):
            return self.client.post(
                url,
                content=body,
                headers=[
                    (b"authorization", self._authorization[1]),
                    (b"content-type", b"application/json"),
                ],
            )

    def _outcome(self, response: Answer) -> str:
        status = response.status_code
        if status == httpx.codes.OK:
            try:
                name = response.json().get("name")
            except (ValueError, AttributeError):
                name = None
            if not isinstance(name, str) or not name:
                raise transient("fcm_bad_answer", "FCM accepted without a message name.")
            return name
        state, code, message, fields = _error_of(response)
        said = f"FCM answered {status} {code or state}".rstrip() + "."
        if code == "UNREGISTERED":
            raise invalid_token("fcm_unregistered", said)
        if status == httpx.codes.BAD_REQUEST and _about_token(message, fields):
            raise invalid_token("fcm_invalid_token", said)
        if status == httpx.codes.UNAUTHORIZED:
            raise permanent("fcm_unauthorized", f"{said} A new access token was refused too.")
        retry_after = response.header("retry-after")
        if status == httpx.codes.TOO_MANY_REQUESTS:
            raise transient("fcm_throttled", said, retry_after)
        if status >= httpx.codes.INTERNAL_SERVER_ERROR:
            raise transient("fcm_unavailable", said, retry_after)
        raise permanent("fcm_rejected", f"{said} {message}".strip())

    def _token_fetched(self) -> tuple[str, float]:
        """A new access token for the service account: (token, expires_in seconds)."""
        account = self.account
        url = url_guarded(self.client, account.token_uri, what="token_uri")
        now = int(time.time())
        claims = {
            "iss": account.client_email,
            "scope": SCOPE,
            "aud": account.token_uri,
            "iat": now,
            "exp": now + ASSERTION_SECONDS,
        }
        headers = {"kid": account.private_key_id} if account.private_key_id else None
        try:
            assertion = jwt.encode(
                claims, account.private_key_pem, algorithm="RS256", headers=headers
            )
        except (ValueError, TypeError, jwt.PyJWTError):
            raise permanent(
                "fcm_credentials_invalid", "The service account's key cannot sign."
            ) from None
        with provider_reached("The OAuth token endpoint"):
            response = self.client.http.post(
                url, data={"grant_type": GRANT_TYPE, "assertion": assertion}
            )
        return self._token_of(response)

    @staticmethod
    def _token_of(response: httpx.Response) -> tuple[str, float]:
        status = response.status_code
        if status == httpx.codes.OK:
            try:
                body = response.json()
                token, expires_in = body["access_token"], float(body.get("expires_in", 3600))
            except (ValueError, TypeError, KeyError, AttributeError):
                raise transient(
                    "fcm_token_bad_answer", "The OAuth token endpoint answered no token."
                ) from None
            if not isinstance(token, str) or not token:
                raise transient(
                    "fcm_token_bad_answer", "The OAuth token endpoint answered no token."
                )
            return token, expires_in
        try:
            body = response.json()
            reason = str(body.get("error", "")) if isinstance(body, dict) else ""
        except ValueError:
            reason = ""
        said = f"The OAuth token endpoint answered {status} {reason}".rstrip() + "."
        if status == httpx.codes.TOO_MANY_REQUESTS or status >= 500:
            raise transient("fcm_token_unavailable", said, response.headers.get("retry-after"))
        raise permanent("fcm_credentials_rejected", said)
