"""The lean path (config/api/lean.py) answers every request exactly as Django's handler and
DRF's dispatch answer it: each case is sent both ways, through the WSGI application the
servers run and through Django's handler alone, and the status, headers and bodies are
compared (values that differ by nature, new ids and times, aside)."""

import base64
import gzip
import io
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler

from agent.views import McpView
from config.api.lean import LeanFront, lean_table
from contacts.api.views import ContactDetailView
from tenancy.api.base import ProjectView

pytestmark = pytest.mark.django_db(transaction=True)

# Members whose values are new on every request that makes something.
VOLATILE = {"id", "received_at", "created_at", "updated_at", "email"}
HOST = "testserver"


def environ(
    method: str,
    path: str,
    *,
    key: str | None = None,
    body: Any = None,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
    content_type: str | None = "application/json",
) -> dict[str, Any]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
    env: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": HOST,
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": HOST,
        "HTTP_X_REQUEST_ID": "lean-equivalence",
        "wsgi.input": io.BytesIO(data),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if data or method in {"POST", "PUT", "PATCH"}:
        env["CONTENT_LENGTH"] = str(len(data))
    if content_type is not None and (data or method != "GET"):
        env["CONTENT_TYPE"] = content_type
    if key is not None:
        env["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    for name, value in (headers or {}).items():
        env[name] = value
    return env


class Answer:
    def __init__(self, status: str, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.headers = {name.lower(): value for name, value in headers}
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


def call(app: Callable[..., Any], env: dict[str, Any]) -> Answer:
    started: list[Any] = []
    result = app(env, lambda status, headers, exc_info=None: started.append((status, headers)))
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return Answer(started[0][0], started[0][1], body)


def steady(value: Any) -> Any:
    """The answer with the values that are new on every call replaced."""
    if isinstance(value, dict):
        return {
            name: "<new>" if name in VOLATILE and item is not None else steady(item)
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [steady(item) for item in value]
    return value


class Counting:
    """Django's handler, counting the requests the front passes to it."""

    def __init__(self, handler: WSGIHandler) -> None:
        self.handler = handler
        self.calls = 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        self.calls += 1
        return self.handler(environ, start_response)


@pytest.fixture
def apps():
    django = WSGIHandler()
    return LeanFront(Counting(django)), django


def both(apps, make_environ: Callable[[], dict[str, Any]], *, steady_body: bool = True):
    """The same request through the lean front and through Django alone."""
    front, django = apps
    env = make_environ()
    passed_before = front.django.calls
    lean = call(front, env)
    # The lean view that answered, or None when the front passed the request to Django.
    match = front.match(env["REQUEST_METHOD"], env["PATH_INFO"])
    route = match.route if match is not None and front.django.calls == passed_before else None
    full = call(django, make_environ())
    assert lean.status == full.status, (lean.body, full.body)
    lean_headers, full_headers = dict(lean.headers), dict(full.headers)
    for answer, headers in ((lean, lean_headers), (full, full_headers)):
        # What is left of the key's rate limit moves between the two calls.
        if "ratelimit-remaining" in headers:
            headers["ratelimit-remaining"] = "<n>"
        if steady_body and "content-length" in headers:
            # New ids and times need not have the same length (whole seconds drop digits).
            assert headers.pop("content-length") == str(len(answer.body))
    assert lean_headers == full_headers
    if lean.body and lean.headers.get("content-type") == "application/json":
        lean_body, full_body = lean.json(), full.json()
        if steady_body:
            lean_body, full_body = steady(lean_body), steady(full_body)
        assert lean_body == full_body
    else:
        assert lean.body == full.body
    return lean, route


def test_the_lean_routes_are_the_busiest_endpoints_and_views_of_the_api():
    table = lean_table()
    routes = {at: match.route for at, match in table.fixed.items()}
    assert set(routes) == {
        ("POST", "/events"),
        ("POST", "/events/batch"),
        ("POST", "/contacts/upsert"),
        ("GET", "/project"),
        *(("POST", f"/v1/{call}") for call in SEGMENT_CALLS),
        # Tool calls (tests/agent/test_mcp_direct.py sends those both ways).
        ("POST", "/mcp"),
    }
    assert routes["POST", "/mcp"].view is McpView
    # Paths with parameters: read by their route (tests/config/test_lean_routes.py).
    assert [route.view for _, route in table.read["GET"]] == [ContactDetailView]
    assert table.resolved == {}
    for (method, path), route in routes.items():
        if path == "/mcp":
            continue
        # A lean view is a ProjectView with the checks it runs on both paths.
        assert issubclass(route.view, ProjectView)
        assert hasattr(route.view, method.lower())
        view = route.view()
        # Segment's endpoints also take the key as an HTTP Basic write key.
        authentication = "WriteKey" if path.startswith("/v1/") else "ApiKey"
        assert [type(a).__name__ for a in view.get_authenticators()] == [
            f"{authentication}Authentication"
        ]
        assert [type(p).__name__ for p in view.get_permissions()] == ["HasProjectAccess"]


SEGMENT_CALLS = ("track", "identify", "page", "screen", "group", "alias", "batch")
EVENT = {"event": "order.completed", "email": "ada@example.com", "payload": {"total": 42.5}}


def _case_key_headers(world: Any, case: dict[str, Any]) -> tuple[str | None, dict[str, str]]:
    """A case's key (the project's unless it names another, or none) and its headers, with
    the project header it names."""
    key = case.get("key", "project")
    secret = world.keys.get(key, key) if key else None
    headers = dict(case.get("headers", {}))
    if "project_header" in case:
        headers["HTTP_X_SERVICE_PROJECT_ID"] = str(getattr(world, case["project_header"]).id)
    return secret, headers


@pytest.mark.parametrize(
    "case",
    [
        {"body": EVENT},
        {"body": {**EVENT, "occurred_at": "2026-11-01T10:00:00+02:00"}},
        {"body": {**EVENT, "contact_id": "not-a-uuid"}},
        {"body": {"event": "order.completed"}},
        {"body": {"email": "ada@example.com"}},
        {"body": {**EVENT, "event": "sendrealm.contact.created"}},
        {"body": {**EVENT, "payload": {"blob": "x" * 70_000}}},
        {"body": [EVENT]},
        {"body": None},
        {"raw": b"{not json"},
        {"raw": b'{"a": NaN}'},
        {"raw": b"\xff\xfe"},
        {"raw": b"[" * 100 + b"]" * 100},
        {"raw": b"x" * 2_700_000},
        {"body": EVENT, "key": None},
        {"body": EVENT, "key": "sr_unknown"},
        {"body": EVENT, "key": "read_only"},
        {"body": EVENT, "key": "team"},
        {"body": EVENT, "key": "personal_viewer"},
        {"body": EVENT, "key": "personal_owner"},
        {"body": EVENT, "headers": {"HTTP_X_SERVICE_PROJECT_ID": "not-a-project"}},
        {"body": EVENT, "headers": {"HTTP_X_SERVICE_PROJECT_ID": str(uuid.uuid4())}},
        {"body": EVENT, "project_header": "other_project"},
        {"body": EVENT, "project_header": "foreign_project"},
        {"body": EVENT, "content_type": "application/json; charset=utf-8"},
        # Passed to Django by the front, answered there.
        {"body": EVENT, "content_type": "text/plain", "passed": True},
        {"body": EVENT, "content_type": None, "passed": True},
        {"body": EVENT, "headers": {"HTTP_ACCEPT": "text/html"}, "passed": True},
        {"body": EVENT, "headers": {"HTTP_HOST": "evil.example"}, "passed": True},
    ],
)
def test_post_events_answers_the_same_both_ways(apps, world, case):
    secret, headers = _case_key_headers(world, case)
    _, route = both(
        apps,
        lambda: environ(
            "POST",
            "/events",
            key=secret,
            body=case.get("body"),
            raw=case.get("raw"),
            headers=headers,
            content_type=case.get("content_type", "application/json"),
        ),
    )
    assert (route is None) == bool(case.get("passed"))


def test_a_resent_event_is_the_same_duplicate_both_ways(apps, world):
    body = {**EVENT, "idempotency_key": "order-1001"}
    front, _ = apps
    first = call(front, environ("POST", "/events", key=world.keys["project"], body=body))
    assert first.status.startswith("202")
    again, _ = both(
        apps,
        lambda: environ("POST", "/events", key=world.keys["project"], body=body),
        steady_body=False,
    )
    assert again.json()["data"] == {**first.json()["data"], "duplicate": True}


def test_the_security_headers_follow_the_settings_both_ways(world, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_HSTS_PRELOAD = True
    secure = {"HTTP_X_FORWARDED_PROTO": "https"}

    def send(headers: dict[str, str]) -> Answer:
        # Django's middleware reads the settings when its handler loads it.
        django = WSGIHandler()
        lean, route = both(
            (LeanFront(Counting(django)), django),
            lambda: environ(
                "POST", "/events", key=world.keys["project"], body=EVENT, headers=headers
            ),
        )
        assert route is not None
        return lean

    assert send(secure).headers["strict-transport-security"] == "max-age=3600; preload"
    assert "strict-transport-security" not in send({}).headers
    # A changed setting counts at the next request.
    settings.SECURE_REFERRER_POLICY = ["no-referrer", "strict-origin"]
    settings.SECURE_HSTS_SECONDS = 60
    answer = send(secure)
    assert answer.headers["referrer-policy"] == "no-referrer,strict-origin"
    assert answer.headers["strict-transport-security"] == "max-age=60; preload"


def test_a_rate_limited_key_is_refused_the_same_both_ways(apps, world, settings):
    settings.API_RATE_LIMIT = 1
    front, django = apps
    env = lambda: environ("POST", "/events", key=world.keys["project"], body=EVENT)  # noqa: E731
    call(front, env())
    lean = call(front, env())
    full = call(django, env())
    assert lean.status == full.status == "429 Too Many Requests"
    assert lean.headers == full.headers
    assert lean.json() == full.json()


def test_post_events_batch_answers_the_same_both_ways(apps, world):
    def items() -> list[dict[str, Any]]:
        # A new idempotency key each time, so both calls store the same number of events.
        resent = uuid.uuid4().hex
        return [
            EVENT,
            {"event": "x"},
            {**EVENT, "idempotency_key": resent},
            {**EVENT, "idempotency_key": resent},
            {**EVENT, "event": "sendrealm.reserved"},
            {**EVENT, "occurred_at": "2026-01-01T00:00:00+02:00", "external_id": "x-1"},
            {
                "event": "big.numbers",
                "contact_id": str(uuid.uuid4()),
                "payload": {"n": 12345678901234567890123, "f": 1e-7, "none": None},
            },
            {**EVENT, "payload": {"nul": "a\u0000b"}},
            {**EVENT, "email": "not an address", "unknown": 1},
        ]

    def keyless() -> list[dict[str, Any]]:
        return [EVENT, {**EVENT, "external_id": "x-2"}, {"event": "y", "external_id": "x-3"}]

    for body in (
        lambda: {"events": items()},
        lambda: {"events": keyless()},
        lambda: {"events": []},
        lambda: {"events": [EVENT] * 501},
        lambda: {"nope": 1},
    ):
        both(
            apps,
            lambda body=body: environ(
                "POST", "/events/batch", key=world.keys["project"], body=body()
            ),
        )


@pytest.mark.parametrize(
    "body",
    [
        {"email": "grace@example.com", "fields": {"plan": "pro"}},
        {"email": "grace@example.com", "fields": {"plan": "pro", "gone": None, "n": [1.5]}},
        {"email": "grace@example.com", "external_id": None, "fields": {}},
        {"email": "not an email"},
        {"email": "  Grace@Example.COM "},
        {"email": "Grâce@exämple.com", "fields": {"nom": "Zoë"}},
        {"email": 42},
        {"email": None},
        {"email": "grace@example.com", "fields": "no"},
        {"email": "grace@example.com", "fields": {"k" * 101: 1}},
        {"email": "grace@example.com", "fields": {"a": "x\x00y"}},
        {"email": "grace@example.com", "fields": {"blob": "x" * 70_000}},
        {"email": "grace@example.com", "unknown": 1},
        {"email": "grace@example.com", "unknown": 1, "fields": []},
        {"email": "grace@example.com", "external_id": ""},
        {"email": "grace@example.com", "external_id": "x" * 256},
        {},
        [],
        "grace@example.com",
    ],
)
def test_post_contacts_upsert_answers_the_same_both_ways(apps, world, body):
    def fresh() -> dict[str, Any]:
        # A new address each time, so both calls create.
        made = body
        email = body.get("email") if isinstance(body, dict) else None
        if isinstance(email, str) and "grace@example.com" in email.lower():
            fresh = f"{uuid.uuid4().hex}@example.com"
            made = {**body, "email": email.replace(email.strip(), fresh.upper())}
        return environ("POST", "/contacts/upsert", key=world.keys["project"], body=made)

    both(apps, fresh)


@pytest.mark.parametrize(
    "case",
    [
        {"raw": b"{not json"},
        {"raw": b'{"email": "grace@example.com", "fields": {"a": NaN}}'},
        {"raw": b"\xff\xfe"},
        {"raw": b"[" * 100 + b"]" * 100},
        {"raw": b""},
        {"key": None},
        {"key": "sr_unknown"},
        {"key": "read_only"},
        {"key": "sending"},
        {"key": "team"},
        {"key": "personal_owner"},
        {"key": "personal_viewer"},
        {"project_header": "other_project"},
        {"project_header": "foreign_project"},
        {"content_type": "application/json; charset=utf-8"},
        {"content_type": "text/plain", "passed": True},
    ],
)
def test_post_contacts_upsert_refuses_and_serves_the_same_both_ways(apps, world, case):
    secret, headers = _case_key_headers(world, case)
    _, route = both(
        apps,
        lambda: environ(
            "POST",
            "/contacts/upsert",
            key=secret,
            body={"email": f"{uuid.uuid4().hex}@example.com"},
            raw=case.get("raw"),
            headers=headers,
            content_type=case.get("content_type", "application/json"),
        ),
    )
    assert (route is None) == bool(case.get("passed"))


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"fields": {"plan": "pro"}},
        {"fields": {"plan": "free"}},
        {"fields": {"plan": None}},
        {"fields": {"absent": None}},
        {"external_id": "u-1"},
        {"external_id": "u-2"},
        {"external_id": None},
        {"external_id": "taken"},
    ],
)
def test_an_upsert_of_a_known_contact_answers_the_same_both_ways(apps, world, change):
    front, django = apps
    key = world.keys["project"]

    def send(app: Callable[..., Any], body: dict[str, Any]) -> Answer:
        return call(app, environ("POST", "/contacts/upsert", key=key, body=body))

    made = send(django, {"email": "holder@example.com", "external_id": "taken"})
    assert made.status.startswith("201")
    answers = []
    for n, app in (("lean", front), ("full", django)):
        # Each way its own contact, with external ids of its own (`u-1` stands for them).
        email = f"{n}@example.com"
        made = send(app, {"email": email, "fields": {"plan": "free"}, "external_id": f"{n}-1"})
        assert made.status.startswith("201")
        body = {"email": email.upper(), **change}
        if isinstance(change.get("external_id"), str) and change["external_id"] != "taken":
            body["external_id"] = change["external_id"].replace("u", n)
        answers.append(send(app, body))
    lean, full = answers
    assert lean.status == full.status
    assert lean.headers.keys() == full.headers.keys()
    bodies = []
    for n, answer in (("lean", lean), ("full", full)):
        body = steady(answer.json())
        if "data" in body:
            body["data"]["email"] = "<email>"
            body["data"]["external_id"] = body["data"]["external_id"].replace(n, "u")
        bodies.append(body)
    assert bodies[0] == bodies[1]


def test_an_upsert_that_creates_and_one_that_merges_answer_the_same_both_ways(apps, world):
    front, django = apps
    key = world.keys["project"]
    made = [
        call(app, environ("POST", "/contacts/upsert", key=key, body={"email": f"{n}@example.com"}))
        for n, app in (("lean", front), ("full", django))
    ]
    assert [answer.status for answer in made] == ["201 Created"] * 2
    assert made[0].headers.keys() == made[1].headers.keys()
    merged = [
        call(
            app,
            environ(
                "POST",
                "/contacts/upsert",
                key=key,
                body={"email": f"{n}@example.com", "fields": {"a": 1}},
            ),
        )
        for n, app in (("lean", front), ("full", django))
    ]
    assert [answer.status for answer in merged] == ["200 OK"] * 2
    bodies = [steady(answer.json()) for answer in merged]
    for body in bodies:
        body["data"]["email"] = "<email>"
    assert bodies[0] == bodies[1]


@pytest.mark.parametrize(
    "key", ["project", "team", "read_only", "personal_member", "personal_outsider", None]
)
def test_get_project_answers_the_same_both_ways(apps, world, key):
    secret = world.keys[key] if key else None
    both(apps, lambda: environ("GET", "/project", key=secret), steady_body=False)


def test_other_methods_and_paths_are_left_to_django(apps, world):
    key = world.keys["project"]
    for method, path in (("PATCH", "/project"), ("GET", "/events"), ("POST", "/project")):
        _, route = both(
            apps, lambda method=method, path=path: environ(method, path, key=key, body={})
        )
        assert route is None


@pytest.fixture
def contact(world):
    made = call(
        WSGIHandler(),
        environ("POST", "/contacts/upsert", key=world.keys["project"], body={"email": "ada@x.io"}),
    )
    return made.json()["data"]["id"]


@pytest.mark.parametrize(
    ("key", "path", "lean"),
    [
        ("project", "/contacts/{id}", True),
        ("read_only", "/contacts/{id}", True),
        ("team", "/contacts/{id}", True),
        ("personal_member", "/contacts/{id}", True),
        ("personal_outsider", "/contacts/{id}", True),
        (None, "/contacts/{id}", True),
        ("sr_unknown", "/contacts/{id}", True),
        ("project", "/contacts/" + str(uuid.UUID(int=7)), True),
        # Not a UUID, a trailing slash, a fixed path below the prefix: Django answers.
        ("project", "/contacts/not-a-uuid", False),
        ("project", "/contacts/{id}/", False),
        ("project", "/contacts/lookup", False),
        ("project", "/contacts/upsert", False),
    ],
)
def test_get_contact_answers_the_same_both_ways(apps, world, contact, key, path, lean):
    secret = world.keys.get(key, key) if key else None
    _, route = both(
        apps, lambda: environ("GET", path.format(id=contact), key=secret), steady_body=False
    )
    assert (route is not None) == lean
    if lean:
        assert route.name == "contact-detail"


def test_other_methods_at_a_contact_are_left_to_django(apps, world, contact):
    key = world.keys["project"]
    # (A DELETE would differ between the two calls: the second finds the contact gone.)
    for method in ("PATCH", "HEAD"):
        _, route = both(
            apps,
            lambda method=method: environ(method, f"/contacts/{contact}", key=key, body={}),
            steady_body=False,
        )
        assert route is None


def test_segment_batches_answer_the_same_both_ways(apps, world):
    write_key = base64.b64encode(f"{world.keys['project']}:".encode()).decode()
    basic = {"HTTP_AUTHORIZATION": f"Basic {write_key}"}

    def messages() -> list[dict[str, Any]]:
        # A new messageId each time, so both calls store the same events and contacts.
        fresh = uuid.uuid4().hex
        return [
            {"type": "identify", "userId": fresh, "traits": {"email": f"{fresh}@x.io"}},
            {"type": "track", "userId": fresh, "event": "Bought", "messageId": fresh},
            {"type": "group", "userId": fresh, "groupId": "g", "traits": {"n": 1}},
        ]

    for body, headers in (
        (lambda: {"batch": messages()}, basic),
        (lambda: {"batch": [{"type": "shout"}]}, basic),
        (
            lambda: {"batch": [{"type": "track", "event": "x", "properties": {"b": "a" * 33_000}}]},
            basic,
        ),
        (lambda: {"batch": messages()}, {"HTTP_AUTHORIZATION": "Basic bm9wZTo="}),
        (lambda: {"batch": messages()}, {}),
    ):
        both(
            apps,
            lambda body=body, headers=headers: environ(
                "POST", "/v1/batch", body=body(), headers=headers
            ),
        )
    lean, route = both(
        apps,
        lambda: environ(
            "POST", "/v1/track", body={"anonymousId": "a", "event": "Viewed"}, headers=basic
        ),
    )
    assert route is not None
    assert lean.json() == {"success": True}


def test_a_compressed_body_is_left_to_django(apps, world):
    write_key = base64.b64encode(f"{world.keys['project']}:".encode()).decode()
    body = gzip.compress(json.dumps({"anonymousId": "a", "event": "Viewed"}).encode())
    headers = {"HTTP_AUTHORIZATION": f"Basic {write_key}", "HTTP_CONTENT_ENCODING": "gzip"}
    lean, route = both(apps, lambda: environ("POST", "/v1/track", raw=body, headers=headers))
    assert route is None
    assert lean.json() == {"success": True}
