"""A 2025-era request that gets one JSON answer is served by the SDK's single-exchange
driver (`agent.server._single_call`), not by a stateless session manager: each answer
must be the one the session manager gives to the same request, and anything else must
still reach the manager."""

import json
from typing import Any

import pytest
from django.test import Client

from agent import server
from tests.agent.conftest import INITIALIZE, tool_call_message

pytestmark = pytest.mark.django_db

ACCEPT = "application/json, text/event-stream"


def _post(key: str, body: Any, **headers: str) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Client().post(
        "/mcp",
        raw,
        content_type=headers.pop("content_type", "application/json"),
        HTTP_AUTHORIZATION=f"Bearer {key}",
        **{f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()},
    )


def _both(monkeypatch: pytest.MonkeyPatch, key: str, body: Any, **headers: str) -> tuple:
    """The answer of each way, and whether the single exchange served the first."""
    served: list[bool] = []
    single = server._single_exchange

    async def counted(*args: Any) -> Any:
        served.append(True)
        return await single(*args)

    monkeypatch.setattr(server, "_single_exchange", counted)
    direct = _post(key, body, **dict(headers))
    monkeypatch.setattr(server, "_single_call", lambda request, body: None)
    managed = _post(key, body, **dict(headers))
    monkeypatch.undo()
    return direct, managed, bool(served)


def _same(direct: Any, managed: Any) -> None:
    assert direct.status_code == managed.status_code
    assert direct.headers["content-type"] == managed.headers["content-type"]
    if direct.content and direct.headers["content-type"] == "application/json":
        assert direct.json() == managed.json()
    else:
        assert direct.content == managed.content


@pytest.fixture
def contact(api, world) -> dict[str, Any]:
    return api.post(
        "/contacts/upsert",
        {"email": "single@example.com"},
        key=world.keys["personal_owner"],
        project=str(world.project.id),
    ).json()["data"]


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", None])
def test_a_tool_call_is_answered_as_the_session_manager_answers_it(
    monkeypatch, world, contact, version
):
    headers = {"Accept": ACCEPT}
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    body = tool_call_message(
        "contacts_get", {"project_id": str(world.project.id), "contact_id": contact["id"]}
    )
    direct, managed, served = _both(monkeypatch, world.keys["personal_owner"], body, **headers)
    assert served
    _same(direct, managed)
    result = direct.json()
    assert result["id"] == 7
    assert result["result"]["isError"] is False
    assert result["result"]["structuredContent"]["id"] == contact["id"]


@pytest.mark.parametrize(
    "body",
    [
        # A tool's failure is a result.
        tool_call_message(
            "contacts_get", {"project_id": "not-a-uuid", "contact_id": "x"}, request_id="text-id"
        ),
        # An unknown tool, arguments of the wrong shape, no tool name: errors the request
        # runner raises, mapped as the SDK's dispatcher maps them.
        tool_call_message("no_such_tool", {}),
        tool_call_message("contacts_get", "not an object"),
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}},
        {"jsonrpc": "2.0", "id": 4, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 5, "method": "ping"},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
    ],
)
def test_results_and_errors_are_the_session_managers(monkeypatch, world, body):
    direct, managed, served = _both(
        monkeypatch,
        world.keys["personal_owner"],
        body,
        Accept=ACCEPT,
        **{"MCP-Protocol-Version": "2025-11-25"},
    )
    assert served
    _same(direct, managed)
    assert direct.json()["id"] == body["id"]


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        # The handshake, notifications, batches, bad JSON and bad envelopes.
        (INITIALIZE, {}),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, {}),
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], {}),
        (b"{not json", {}),
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, {}),
        # A client that does not accept JSON, and a protocol version of no handshake era.
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Accept": "text/event-stream"}),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"MCP-Protocol-Version": "1999-01-01"}),
    ],
)
def test_anything_else_reaches_the_session_manager(monkeypatch, world, body, headers):
    direct, managed, served = _both(
        monkeypatch,
        world.keys["personal_owner"],
        body,
        **{"Accept": ACCEPT, **headers},
    )
    assert not served
    _same(direct, managed)
