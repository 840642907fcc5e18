"""A `tools/call` is answered on the lean path (`agent.direct`) exactly as Django's handler
and the SDK answer it: each case is sent through the WSGI application the servers run and
through Django's handler alone, and the status, headers and JSON bodies are compared (the
text of a result read as the JSON it repeats; values new on every call aside). Requests
the SDK answers its own way still reach it."""

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest
from django.core.handlers.wsgi import WSGIHandler

from agent import views
from agent.models import ToolCall
from automations.models import Automation, AutomationStatus
from config.api.lean import LeanFront
from tests.agent.conftest import (
    INITIALIZE,
    MODERN_VERSION,
    Mcp,
    data,
    error,
    tool_call_message,
)
from tests.automations.factories import AutomationFactory
from tests.config.test_lean import Answer, Counting, call, environ
from tests.config.test_lean import apps as apps

pytestmark = pytest.mark.django_db(transaction=True)

ACCEPT = "application/json, text/event-stream"
MODERN = MODERN_VERSION
# Members whose values are new on every call that makes something.
VOLATILE = {"id", "created_at", "updated_at", "prepared_action_id", "expires_at"}


def _headers(body: Any, *, version: str | None = "2025-11-25", **extra: str) -> dict[str, str]:
    headers = {"HTTP_ACCEPT": ACCEPT}
    if version is not None:
        headers["HTTP_MCP_PROTOCOL_VERSION"] = version
    if version == MODERN and isinstance(body, dict):
        # The 2026 revision routes by headers that repeat the method and the tool.
        headers["HTTP_MCP_METHOD"] = body.get("method", "")
        headers["HTTP_MCP_NAME"] = body.get("params", {}).get("name", "")
    headers.update(extra)
    return headers


def _steady(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            name: "<new>" if name in VOLATILE and item is not None else _steady(item)
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [_steady(item) for item in value]
    return value


def _read(answer: Answer) -> Any:
    """The JSON body, a result's text read as the JSON it repeats."""
    body = answer.json()
    result = body.get("result") if isinstance(body, dict) else None
    if isinstance(result, dict):
        for block in result.get("content", []):
            block["text"] = json.loads(block["text"])
    return _steady(body)


def _both(apps: Any, make: Callable[[], dict[str, Any]]) -> tuple[Answer, bool]:
    """The same request through the front and through Django alone; whether the front
    answered it itself."""
    front, django = apps
    assert isinstance(front.django, Counting)
    passed = front.django.calls
    lean = call(front, make())
    direct = front.django.calls == passed
    full = call(django, make())
    assert lean.status == full.status, (lean.body, full.body)
    headers = []
    for answer in (lean, full):
        seen = dict(answer.headers)
        assert seen.pop("content-length") == str(len(answer.body))
        # What is left of the key's rate limit moves between the two calls.
        if "ratelimit-remaining" in seen:
            seen["ratelimit-remaining"] = "<n>"
        headers.append(seen)
    assert headers[0] == headers[1]
    if lean.headers.get("content-type") == "application/json" and lean.body:
        assert _read(lean) == _read(full)
    else:
        assert lean.body == full.body
    return lean, direct


def _mcp(key: str | None, body: Any, **headers: str) -> Callable[[], dict[str, Any]]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    content_type = headers.pop("content_type", "application/json")
    return lambda: environ(
        "POST", "/mcp", key=key, raw=raw, headers=headers, content_type=content_type
    )


@pytest.fixture
def owner(world) -> str:
    return world.keys["personal_owner"]


@pytest.fixture
def contact(api, world, owner) -> dict[str, Any]:
    return api.post(
        "/contacts/upsert",
        {"email": "direct@example.com"},
        key=owner,
        project=str(world.project.id),
    ).json()["data"]


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2024-11-05", None, MODERN])
def test_a_tool_call_answers_the_same_both_ways(apps, world, owner, contact, version):
    arguments = {"project_id": str(world.project.id), "contact_id": contact["id"]}
    body = tool_call_message("contacts_get", arguments, modern=version == MODERN)
    before = ToolCall.objects.count()

    answer, direct = _both(apps, _mcp(owner, body, **_headers(body, version=version)))

    assert direct
    assert answer.status == "200 OK"
    result = answer.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["id"] == contact["id"]
    assert (result.get("resultType") == "complete") is (version == MODERN)
    # Both ways leave their audit row.
    assert ToolCall.objects.count() == before + 2


@pytest.mark.parametrize("modern", [False, True])
@pytest.mark.parametrize(
    "case",
    [
        # A tool's failures are results: an unknown tool, arguments it refuses, a
        # project the key cannot reach, a row that is not there.
        ("no_such_tool", {}),
        ("contacts_get", {"project_id": "not-a-uuid", "contact_id": "x"}),
        ("contacts_get", {"contact_id": "00000000-0000-0000-0000-000000000000"}),
        ("contacts_get", {"project_id": "<project>", "contact_id": "<contact>", "extra": 1}),
        ("contacts_get", {"project_id": "<foreign>", "contact_id": "<contact>"}),
        ("contacts_get", {"project_id": "<project>", "contact_id": str(uuid.UUID(int=1))}),
        ("contacts_lookup", {"project_id": "<project>", "external_id": "nobody"}),
        ("contacts_upsert", {"project_id": "<project>", "email": "not an email"}),
        ("contacts_get", None),
    ],
)
def test_tool_failures_answer_the_same_both_ways(apps, world, owner, contact, case, modern):
    name, arguments = case
    names = {
        "<project>": str(world.project.id),
        "<foreign>": str(world.foreign_project.id),
        "<contact>": contact["id"],
    }
    if arguments is not None:
        arguments = {key: names.get(value, value) for key, value in arguments.items()}
    body = tool_call_message(name, arguments, request_id="text-id", modern=modern)
    version = MODERN if modern else "2025-11-25"
    before = ToolCall.objects.count()

    answer, direct = _both(apps, _mcp(owner, body, **_headers(body, version=version)))

    assert direct
    assert answer.json()["id"] == "text-id"
    assert answer.json()["result"]["isError"] is (name != "contacts_lookup")
    assert ToolCall.objects.count() == before + 2


@pytest.mark.parametrize("modern", [False, True])
@pytest.mark.parametrize(
    ("key", "status"),
    [(None, 401), ("sr_user_unknown", 401), ("team", 403), ("project", 403)],
)
def test_keys_are_refused_the_same_both_ways(apps, world, contact, key, status, modern):
    arguments = {"project_id": str(world.project.id), "contact_id": contact["id"]}
    body = tool_call_message("contacts_get", arguments, modern=modern)
    secret = world.keys.get(key, key) if key is not None else None
    version = MODERN if modern else "2025-11-25"

    answer, direct = _both(apps, _mcp(secret, body, **_headers(body, version=version)))

    assert direct
    assert answer.status.startswith(str(status))


def test_a_rate_limited_key_is_refused_the_same_both_ways(apps, world, owner, contact, settings):
    settings.API_RATE_LIMIT = 1
    front, _ = apps
    arguments = {"project_id": str(world.project.id), "contact_id": contact["id"]}
    body = tool_call_message("contacts_get", arguments)
    make = _mcp(owner, body, **_headers(body))
    call(front, make())

    answer, direct = _both(apps, make)

    assert direct
    assert answer.status == "429 Too Many Requests"
    assert "retry-after" in answer.headers


def test_a_session_header_is_ignored_both_ways(apps, world, owner, contact):
    # The server is stateless: the SDK's transport neither issues nor checks a session.
    arguments = {"project_id": str(world.project.id), "contact_id": contact["id"]}
    body = tool_call_message("contacts_get", arguments)
    headers = _headers(body, HTTP_MCP_SESSION_ID="no-such-session")

    answer, direct = _both(apps, _mcp(owner, body, **headers))

    assert direct
    assert answer.json()["result"]["isError"] is False
    assert "mcp-session-id" not in answer.headers


@pytest.mark.parametrize(
    ("modern", "meta", "headers"),
    [
        # A progress token: the single exchange has no stream to report progress on.
        (False, {"progressToken": 5}, {}),
        # Client info in the 2026 envelope, and an `Mcp-Param-*` header no tool declares.
        (True, {"io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}, {}),
        (True, {}, {"HTTP_MCP_PARAM_CONTACT_ID": "x"}),
    ],
)
def test_what_a_call_may_carry_besides_answers_the_same_both_ways(
    apps, world, owner, contact, modern, meta, headers
):
    arguments = {"project_id": str(world.project.id), "contact_id": contact["id"]}
    body = tool_call_message("contacts_get", arguments, modern=modern)
    body["params"]["_meta"] = {**body["params"].get("_meta", {}), **meta}
    version = MODERN if modern else "2025-11-25"

    answer, direct = _both(apps, _mcp(owner, body, **_headers(body, version=version, **headers)))

    assert direct
    assert answer.json()["result"]["structuredContent"]["id"] == contact["id"]


def test_a_publish_is_prepared_and_executed_the_same_both_ways(apps, world, owner):
    automation = AutomationFactory(project=world.project)
    p = {"project_id": str(world.project.id)}
    prepare = tool_call_message(
        "automation_action_prepare",
        {**p, "automation_id": str(automation.id), "action": "publish"},
    )

    prepared, direct = _both(apps, _mcp(owner, prepare, **_headers(prepare)))

    assert direct
    preparation = prepared.json()["result"]["structuredContent"]
    execute = {**p, "prepared_action_id": preparation["prepared_action_id"]}
    # The first executes, the second (the same idempotency key) repeats its answer.
    once = tool_call_message("prepared_action_execute", {**execute, "idempotency_key": "k"})
    executed, direct = _both(apps, _mcp(owner, once, **_headers(once)))
    assert direct
    assert executed.json()["result"]["structuredContent"]["status"] == "active"
    # Another key: a conflict both ways.
    other = tool_call_message("prepared_action_execute", {**execute, "idempotency_key": "other"})
    conflict, direct = _both(apps, _mcp(owner, other, **_headers(other)))
    assert direct
    assert conflict.json()["result"]["structuredContent"]["code"] == "conflict"
    assert Automation.objects.get(id=automation.id).status == AutomationStatus.ACTIVE


def _envelope_without_version() -> dict[str, Any]:
    body = tool_call_message("contacts_get", {}, modern=True)
    del body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
    return body


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        # Other methods, the handshake, notifications, batches.
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {}),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {}),
        (INITIALIZE, {}),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, {}),
        ([tool_call_message("contacts_get", {})], {}),
        # Messages the SDK refuses: bad JSON, bad envelopes, parameters of the wrong shape.
        (b"{not json", {}),
        ({**tool_call_message("contacts_get", {}), "jsonrpc": "1.0"}, {}),
        ({**tool_call_message("contacts_get", {}), "id": True}, {}),
        ({**tool_call_message("contacts_get", {}), "id": 1.5}, {}),
        ({**tool_call_message("contacts_get", {}), "extra": 1}, {}),
        (tool_call_message("contacts_get", "not an object"), {}),
        ({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}}, {}),
        ({"jsonrpc": "2.0", "id": 3, "method": "tools/call"}, {}),
        # Headers the SDK refuses or reads its own way.
        (tool_call_message("contacts_get", {}), {"HTTP_ACCEPT": "text/event-stream"}),
        (tool_call_message("contacts_get", {}), {"HTTP_MCP_PROTOCOL_VERSION": "1999-01-01"}),
        (tool_call_message("contacts_get", {}), {"content_type": "text/plain"}),
        # An integer beyond 64 bits, which orjson would read as a float.
        (tool_call_message("contacts_get", {"contact_id": 123456789012345678901}), {}),
        # The 2026 envelope: a version header without the envelope, an envelope without a
        # version, headers that disagree with the body.
        (tool_call_message("contacts_get", {}), {"HTTP_MCP_PROTOCOL_VERSION": MODERN}),
        (_envelope_without_version(), {"HTTP_MCP_PROTOCOL_VERSION": MODERN}),
        (
            tool_call_message("contacts_get", {}, modern=True),
            {
                "HTTP_MCP_PROTOCOL_VERSION": MODERN,
                "HTTP_MCP_METHOD": "tools/call",
                "HTTP_MCP_NAME": "contacts_lookup",
            },
        ),
        (
            tool_call_message("contacts_get", {}, modern=True),
            {"HTTP_MCP_PROTOCOL_VERSION": MODERN, "HTTP_MCP_METHOD": "tools/list"},
        ),
    ],
)
def test_anything_else_reaches_the_sdk(apps, world, owner, body, headers):
    _, direct = _both(apps, _mcp(owner, body, **{"HTTP_ACCEPT": ACCEPT, **headers}))

    assert not direct


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_other_methods_reach_the_view(apps, world, owner, method):
    front, django = apps
    passed = front.django.calls
    lean = call(front, environ(method, "/mcp", key=owner, headers={"HTTP_ACCEPT": ACCEPT}))
    full = call(django, environ(method, "/mcp", key=owner, headers={"HTTP_ACCEPT": ACCEPT}))
    assert front.django.calls == passed + 1
    assert lean.status == full.status == "405 Method Not Allowed"


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


class _ThreadedServer(WSGIServer):
    # One thread per connection: the client keeps one open while it opens another.
    def process_request(self, request: Any, client_address: Any) -> None:
        threading.Thread(target=self._serve, args=(request, client_address), daemon=True).start()

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        finally:
            self.shutdown_request(request)


@pytest.fixture
def front_url() -> Iterator[str]:
    """The WSGI application the servers run (the lean front before Django's handler)."""
    server = make_server(
        "127.0.0.1",
        0,
        LeanFront(WSGIHandler()),
        server_class=_ThreadedServer,
        handler_class=_Quiet,
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("modern", [False, True])
def test_the_official_clients_tool_calls_are_answered_directly(
    monkeypatch, front_url, world, owner, modern
):
    answered: list[str] = []
    answer = views.direct_answer

    def counted(call: Any, **kwargs: Any) -> Any:
        answered.append(call.name)
        return answer(call, **kwargs)

    monkeypatch.setattr(views, "direct_answer", counted)
    p = {"project_id": str(world.project.id)}

    async def work(session: Any) -> Any:
        made = await session.call_tool("contacts_upsert", {**p, "email": "sdk@example.com"})
        found = await session.call_tool("contacts_get", {**p, "contact_id": data(made)["id"]})
        missing = await session.call_tool("contacts_get", {**p, "contact_id": "nope"})
        listed = await session.list_tools()
        return made, found, missing, listed

    made, found, missing, listed = Mcp(front_url).run(owner, work, modern=modern)

    assert answered == ["contacts_upsert", "contacts_get", "contacts_get"]
    assert data(found)["id"] == data(made)["id"]
    assert data(found)["email"] == "sdk@example.com"
    assert error(missing)["issues"][0]["path"] == "contact_id"
    assert any(tool.name == "contacts_get" for tool in listed.tools)
