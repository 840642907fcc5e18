"""Loopback stand-ins for the push providers, checking what the real ones check.

- FcmStandin: Google's OAuth token endpoint (verifies the RS256 assertion with the service
  account's public key and its claims) and FCM's messages:send (Bearer token, path,
  message shape), over HTTP/1.1.
- ApnsStandin: APNs over cleartext HTTP/2 (prior knowledge), an h2 state machine per
  connection; verifies the ES256 provider token, topic, path and JSON.
- WebPushStandin: a push service; verifies the VAPID header (ES256 JWT signed by `k`,
  `aud` = the origin) and decrypts the aes128gcm body with the subscription's private key
  and auth secret, as the browser would.

Each counts the TCP connections it accepted and records what it got; `problems` lists
anything a real provider would have refused (the stand-in refused it too).
"""

import contextlib
import functools
import itertools
import json
import secrets
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import h2.config
import h2.connection
import h2.events
import http_ece
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pushproviders.credentials import b64url, b64url_decoded

FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


@functools.cache  # loading an RSA key checks it, a tenth of a second or more
def public_pem_of(private_pem: str) -> bytes:
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


class _HttpStandin:
    """A threaded HTTP/1.1 server on 127.0.0.1 with a JSON-answering handler."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0
        self.problems: list[str] = []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with standin.lock:
                    standin.connections += 1

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                with standin.lock:
                    standin.requests += 1
                status, headers, answer = standin.handle(self.path, self.headers, body)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def handle(self, path: str, headers: Any, body: bytes) -> tuple[int, dict[str, str], bytes]:
        raise NotImplementedError

    def refuse(self, problem: str) -> None:
        with self.lock:
            self.problems.append(problem)

    def __enter__(self) -> "_HttpStandin":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _json(status: int, body: Any, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return status, {"content-type": "application/json", **headers}, json.dumps(body).encode()


def _google_error(
    status: int, state: str, message: str, *details: dict[str, Any], **headers: str
) -> tuple[int, dict[str, str], bytes]:
    error = {"code": status, "message": message, "status": state, "details": list(details)}
    return _json(status, {"error": error}, **headers)


def _fcm_error(code: str) -> dict[str, Any]:
    return {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}


# FCM ------------------------------------------------------------------------------------


def _fcm_message(body: bytes) -> dict[str, Any] | None:
    """The `message` of a messages:send body when FCM would parse it, else None."""
    try:
        message = json.loads(body)["message"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(message, dict):
        return None
    notification = message.get("notification")
    data = message.get("data", {})
    if (
        not isinstance(message.get("token"), str)
        or not message["token"]
        or not isinstance(notification, dict)
        or not isinstance(notification.get("title"), str)
        or not isinstance(notification.get("body"), str)
        or not isinstance(data, dict)
        or not all(isinstance(value, str) for value in data.values())
        or not set(message) <= {"token", "notification", "data", "android", "apns"}
    ):
        return None
    return message


class FcmStandin(_HttpStandin):
    """The OAuth token endpoint (`token_uri`) and FCM HTTP v1 (`url` as the base URL)."""

    def __init__(self, *, account: dict[str, Any], expires_in: int = 3599) -> None:
        super().__init__()
        self.account = account
        self.public_key = public_pem_of(account["private_key"])
        self.expires_in = expires_in
        self.issued: list[str] = []
        self.revoked: set[str] = set()
        self.messages: list[dict[str, Any]] = []
        # Device tokens FCM no longer knows, and answers to give the next sends.
        self.unregistered: set[str] = set()
        self.next_answers: deque[tuple[int, str, dict[str, str]]] = deque()
        self.next_token_answers: deque[int] = deque()
        self.counter = itertools.count(1)

    @property
    def token_uri(self) -> str:
        return f"{self.url}/token"

    def fail_next(self, status: int, state: str = "UNAVAILABLE", **headers: str) -> None:
        self.next_answers.append((status, state, headers))

    def revoke_tokens(self) -> None:
        """Every access token issued so far stops working (401), as after a key rotation."""
        with self.lock:
            self.revoked.update(self.issued)

    def handle(self, path: str, headers: Any, body: bytes) -> tuple[int, dict[str, str], bytes]:
        if path == "/token":
            return self._token(headers, body)
        return self._send(path, headers, body)

    def _token(self, headers: Any, body: bytes) -> tuple[int, dict[str, str], bytes]:
        if self.next_token_answers:
            return _json(self.next_token_answers.popleft(), {"error": "internal_failure"})
        if headers.get("content-type", "").split(";")[0] != "application/x-www-form-urlencoded":
            self.refuse("token request is not a form")
            return _json(400, {"error": "invalid_request"})
        form = {name: values[0] for name, values in parse_qs(body.decode()).items()}
        if form.get("grant_type") != JWT_BEARER:
            self.refuse(f"grant_type {form.get('grant_type')!r}")
            return _json(400, {"error": "unsupported_grant_type"})
        try:
            claims = jwt.decode(
                form.get("assertion", ""),
                self.public_key,
                algorithms=["RS256"],
                audience=self.token_uri,
                issuer=self.account["client_email"],
                options={"require": ["iss", "aud", "iat", "exp", "scope"]},
            )
        except jwt.PyJWTError as error:
            self.refuse(f"assertion: {error}")
            return _json(400, {"error": "invalid_grant", "error_description": "Invalid JWT"})
        if claims["scope"] != FCM_SCOPE or not 0 < claims["exp"] - claims["iat"] <= 3600:
            self.refuse(f"assertion claims {claims}")
            return _json(400, {"error": "invalid_scope"})
        header = jwt.get_unverified_header(form["assertion"])
        if header.get("kid") != self.account.get("private_key_id"):
            self.refuse(f"assertion kid {header.get('kid')!r}")
            return _json(400, {"error": "invalid_grant"})
        token = f"ya29.{secrets.token_urlsafe(24)}"
        with self.lock:
            self.issued.append(token)
        return _json(
            200, {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}
        )

    def _send(self, path: str, headers: Any, body: bytes) -> tuple[int, dict[str, str], bytes]:
        project = self.account["project_id"]
        if path != f"/v1/projects/{project}/messages:send":
            self.refuse(f"path {path}")
            return _google_error(404, "NOT_FOUND", "Requested entity was not found.")
        token = headers.get("authorization", "").removeprefix("Bearer ")
        with self.lock:
            known = token in self.issued and token not in self.revoked
        if not known:
            return _google_error(
                401, "UNAUTHENTICATED", "Request had invalid authentication credentials."
            )
        message = _fcm_message(body)
        if message is None:
            self.refuse(f"message shape {body[:200]!r}")
            return _google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        device = message["token"]
        if self.next_answers:
            status, state, extra = self.next_answers.popleft()
            code = "QUOTA_EXCEEDED" if status == 429 else state
            return _google_error(status, state, "Failing on purpose.", _fcm_error(code), **extra)
        if device in self.unregistered:
            return _google_error(
                404, "NOT_FOUND", "Requested entity was not found.", _fcm_error("UNREGISTERED")
            )
        if not device.isprintable() or " " in device or len(device) < 16:
            return _google_error(
                400,
                "INVALID_ARGUMENT",
                "The registration token is not a valid FCM registration token",
                _fcm_error("INVALID_ARGUMENT"),
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [
                        {"field": "message.token", "description": "Invalid registration token"}
                    ],
                },
            )
        with self.lock:
            self.messages.append(message)
        return _json(200, {"name": f"projects/{project}/messages/{next(self.counter)}"})


# APNs -----------------------------------------------------------------------------------


@dataclass
class ApnsRequest:
    headers: dict[str, str]
    body: bytes = b""
    connection: int = 0


class ApnsStandin:
    """APNs over cleartext HTTP/2 with prior knowledge, on 127.0.0.1."""

    PROVIDER_TOKEN_SECONDS = 3600

    def __init__(
        self,
        *,
        private_key_pem: str,
        key_id: str,
        team_id: str,
        bundle_id: str,
        keep_wire: bool = False,
    ):
        self.keep_wire = keep_wire
        self.public_key = public_pem_of(private_key_pem)
        self.key_id = key_id
        self.team_id = team_id
        self.bundle_id = bundle_id
        self.lock = threading.Lock()
        self.connections = 0
        self.provider_tokens: list[str] = []  # distinct tokens, in the order first seen
        self.expired: set[str] = set()
        # Provider tokens whose signature and claims checked out, as APNs keeps them: the
        # same string verifies the same way, and its age and expiry are checked each time.
        self.verified: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self.delivered: list[ApnsRequest] = []
        self.problems: list[str] = []
        self.unregistered: set[str] = set()  # 410 Unregistered
        self.bad: set[str] = set()  # 400 BadDeviceToken
        self.next_answers: deque[tuple[int, str, dict[str, str]]] = deque()
        # With `keep_wire`, the bytes each connection sent, by its number (1, 2, ...).
        self.wire: dict[int, bytearray] = {}
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.sockets: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def fail_next(self, status: int, reason: str, **headers: str) -> None:
        self.next_answers.append((status, reason, headers))

    def expire_current_token(self) -> None:
        """APNs answers ExpiredProviderToken to the tokens seen so far."""
        with self.lock:
            self.expired.update(self.provider_tokens)

    def __enter__(self) -> "ApnsStandin":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()
        with self.lock:
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                number = self.connections
                self.sockets.append(sock)
            threading.Thread(target=self._serve, args=(sock, number), daemon=True).start()

    def _serve(self, sock: socket.socket, number: int) -> None:
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        conn = h2.connection.H2Connection(config=config)
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        streams: dict[int, ApnsRequest] = {}
        try:
            while True:
                data = sock.recv(65535)
                if not data:
                    return
                if self.keep_wire:
                    with self.lock:
                        self.wire.setdefault(number, bytearray()).extend(data)
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        streams[event.stream_id] = ApnsRequest(
                            headers=dict(event.headers), connection=number
                        )
                    elif isinstance(event, h2.events.DataReceived):
                        streams[event.stream_id].body += event.data
                        conn.acknowledge_received_data(
                            event.flow_controlled_length, event.stream_id
                        )
                    elif isinstance(event, h2.events.StreamEnded):
                        request = streams.pop(event.stream_id)
                        status, headers, body = self._answer(request)
                        response = [(":status", str(status)), *headers.items()]
                        if body:
                            response.append(("content-length", str(len(body))))
                        conn.send_headers(event.stream_id, response, end_stream=not body)
                        if body:
                            conn.send_data(event.stream_id, body, end_stream=True)
                    elif isinstance(event, h2.events.ConnectionTerminated):
                        sock.sendall(conn.data_to_send())
                        return
                sock.sendall(conn.data_to_send())
        except OSError:
            return
        finally:
            sock.close()

    def _refused(self, status: int, reason: str, problem: str = "") -> tuple[int, dict, bytes]:
        if problem:
            with self.lock:
                self.problems.append(problem)
        return status, {"content-type": "application/json"}, json.dumps({"reason": reason}).encode()

    def _answer(self, request: ApnsRequest) -> tuple[int, dict[str, str], bytes]:
        headers = request.headers
        path = headers.get(":path", "")
        if headers.get(":method") != "POST" or not path.startswith("/3/device/"):
            return self._refused(404, "BadPath", f"path {path}")
        device = path.removeprefix("/3/device/")
        authorization = headers.get("authorization", "")
        if not authorization.startswith("bearer "):
            return self._refused(403, "MissingProviderToken", "no provider token")
        token = authorization.removeprefix("bearer ")
        with self.lock:
            verified = self.verified.get(token)
        if verified is None:
            try:
                header = jwt.get_unverified_header(token)
                claims = jwt.decode(
                    token,
                    self.public_key,
                    algorithms=["ES256"],
                    issuer=self.team_id,
                    options={"require": ["iss", "iat"], "verify_exp": False},
                )
            except jwt.PyJWTError as error:
                return self._refused(403, "InvalidProviderToken", f"provider token: {error}")
            with self.lock:
                self.verified[token] = (header, claims)
        else:
            header, claims = verified
        if header.get("kid") != self.key_id or header.get("alg") != "ES256":
            return self._refused(403, "InvalidProviderToken", f"provider token header {header}")
        with self.lock:
            if token not in self.provider_tokens:
                self.provider_tokens.append(token)
            expired = token in self.expired
        if expired or time.time() - claims["iat"] > self.PROVIDER_TOKEN_SECONDS:
            return self._refused(403, "ExpiredProviderToken")
        if headers.get("apns-topic") != self.bundle_id:
            return self._refused(400, "BadTopic", f"topic {headers.get('apns-topic')!r}")
        if headers.get("apns-push-type") != "alert":
            return self._refused(400, "InvalidPushType", "push type")
        if headers.get("apns-priority") not in ("5", "10"):
            return self._refused(400, "BadPriority", "priority")
        if len(request.body) > 4096:
            return self._refused(413, "PayloadTooLarge")
        try:
            alert = json.loads(request.body)["aps"]["alert"]
            readable = isinstance(alert["title"], str) and isinstance(alert["body"], str)
        except (ValueError, KeyError, TypeError):
            readable = False
        if not readable:
            return self._refused(400, "PayloadEmpty", f"payload {request.body[:200]!r}")
        if self.next_answers:
            status, reason, extra = self.next_answers.popleft()
            answer = self._refused(status, reason)
            return answer[0], {**answer[1], **extra}, answer[2]
        if device in self.unregistered:
            body = {"reason": "Unregistered", "timestamp": int(time.time() * 1000)}
            return 410, {"content-type": "application/json"}, json.dumps(body).encode()
        if device in self.bad or len(device) != 64:
            return self._refused(400, "BadDeviceToken")
        with self.lock:
            self.delivered.append(request)
        return (
            200,
            {"apns-id": headers.get("apns-id") or "77777777-7777-7777-7777-777777777777"},
            b"",
        )


# Web Push -------------------------------------------------------------------------------


@dataclass
class BrowserSubscription:
    """What a browser keeps for a push subscription: its key pair and auth secret."""

    endpoint: str
    private_key: ec.EllipticCurvePrivateKey
    auth: bytes
    answer: int = 201
    received: list[dict[str, Any]] = field(default_factory=list)

    @property
    def p256dh(self) -> str:
        point = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return b64url(point)

    @property
    def auth_b64(self) -> str:
        return b64url(self.auth)


class WebPushStandin(_HttpStandin):
    """A push service on 127.0.0.1 holding subscriptions made with one VAPID public key."""

    def __init__(self, *, vapid_public_key: str, host: str = "127.0.0.1") -> None:
        super().__init__()
        self.vapid_public_key = vapid_public_key
        self.host = host
        self.subscriptions: dict[str, BrowserSubscription] = {}
        self.next_answers: deque[tuple[int, dict[str, str]]] = deque()
        self.headers_seen: list[dict[str, str]] = []
        self.bodies: list[bytes] = []

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.server.server_address[1]}"

    def subscribe(self, *, answer: int = 201) -> BrowserSubscription:
        """A subscription as PushManager.subscribe() makes it: a new P-256 key pair and 16
        random bytes of auth secret; `answer` is the status sends to it get."""
        name = secrets.token_urlsafe(16)
        subscription = BrowserSubscription(
            endpoint=f"{self.origin}/push/{name}",
            private_key=ec.generate_private_key(ec.SECP256R1()),
            auth=secrets.token_bytes(16),
            answer=answer,
        )
        self.subscriptions[name] = subscription
        return subscription

    def fail_next(self, status: int, **headers: str) -> None:
        self.next_answers.append((status, headers))

    def handle(self, path: str, headers: Any, body: bytes) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.headers_seen.append({k.lower(): v for k, v in headers.items()})
            self.bodies.append(body)
        subscription = self.subscriptions.get(path.removeprefix("/push/"))
        if subscription is None:
            return 404, {}, b""
        problem = self._vapid_problem(headers.get("authorization", ""))
        if problem:
            self.refuse(problem)
            return 403, {}, problem.encode()
        if headers.get("content-encoding") != "aes128gcm":
            self.refuse(f"content-encoding {headers.get('content-encoding')!r}")
            return 415, {}, b""
        if not (headers.get("ttl") or "").isdigit():
            self.refuse("no TTL")
            return 400, {}, b""
        if len(body) > 4096:
            return 413, {}, b""
        try:
            plain = http_ece.decrypt(
                body,
                private_key=subscription.private_key,
                auth_secret=subscription.auth,
                version="aes128gcm",
            )
            message = json.loads(plain)
        except Exception as error:
            self.refuse(f"cannot decrypt: {error!r}")
            return 400, {}, b""
        if self.next_answers:
            status, extra = self.next_answers.popleft()
            return status, extra, b""
        if subscription.answer != 201:
            return subscription.answer, {}, b""
        with self.lock:
            subscription.received.append(message)
            number = sum(len(s.received) for s in self.subscriptions.values())
        return 201, {"location": f"{self.origin}/message/{number}"}, b""

    def _vapid_problem(self, authorization: str) -> str:
        if not authorization.startswith("vapid "):
            return "no vapid authorization"
        parts = dict(
            part.strip().split("=", 1) for part in authorization.removeprefix("vapid ").split(",")
        )
        if parts.get("k") != self.vapid_public_key:
            return "k is not the key the subscription was made with"
        point = b64url_decoded(parts["k"])
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
        try:
            claims = jwt.decode(
                parts.get("t", ""),
                public,
                algorithms=["ES256"],
                audience=self.origin,
                options={"require": ["aud", "exp", "sub"]},
            )
        except jwt.PyJWTError as error:
            return f"vapid jwt: {error}"
        if claims["exp"] > time.time() + 24 * 3600:
            return "vapid jwt lives longer than 24 hours"
        if not str(claims["sub"]).startswith(("mailto:", "https:")):
            return f"vapid sub {claims['sub']!r}"
        return ""
