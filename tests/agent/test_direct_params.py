"""A `tools/call` of a name and arguments (with at most a `_meta`, whose verdict is kept) is
read without running the SDK's models each time; what it is read as, and which parameters
are left to the SDK, must be exactly what the SDK's own checks decide, the first time and
the next."""

import json

import mcp_types as types
import pytest
from mcp_types import methods
from pydantic import ValidationError

from agent import direct
from agent.direct import TOOLS_CALL, DirectCall, direct_call
from tests.agent.conftest import MODERN_VERSION

VERSION = "2025-11-25"
PARAMS = [
    {"name": "contacts_get", "arguments": {"project_id": "p", "contact_id": "c"}},
    {"name": "projects_list"},
    {"name": "projects_list", "arguments": None},
    {"name": "projects_list", "arguments": {}},
    {"name": "x", "arguments": {"nested": {"deep": [1, None, "a"]}, "n": 1.5}},
    {"name": "", "arguments": {}},
    {"name": 7, "arguments": {}},
    {"name": None, "arguments": {}},
    {"name": ["contacts_get"], "arguments": {}},
    {"name": True},
    {"arguments": {}},
    {},
    {"name": "contacts_get", "arguments": []},
    {"name": "contacts_get", "arguments": "{}"},
    {"name": "contacts_get", "arguments": 3},
    {"name": "contacts_get", "arguments": True},
]


MODERN = MODERN_VERSION
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
METAS = [
    {},
    {"progressToken": 5},
    {"progressToken": [1]},
    {"progressToken": None},
    {"io.modelcontextprotocol/clientInfo": "not an object"},
    {"io.modelcontextprotocol/clientInfo": {"name": "agent", "version": "1"}},
    {"io.modelcontextprotocol/clientCapabilities": "none"},
    {"io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": "yes"}}},
    {"elsewhere.example/flag": {"a": [1, 2]}},
]


def _sdk_read(params: dict, version: str = VERSION) -> tuple[str, dict | None] | None:
    try:
        methods.validate_client_request(TOOLS_CALL, version, params)
        typed = types.CallToolRequestParams.model_validate(params, by_name=False)
    except (KeyError, ValidationError):
        return None
    return typed.name, typed.arguments


def _read(params: dict, version: str) -> DirectCall | None:
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": TOOLS_CALL, "params": params})
    environ = {
        "CONTENT_TYPE": "application/json",
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": version,
    }
    if version == MODERN:
        environ["HTTP_MCP_METHOD"] = TOOLS_CALL
        environ["HTTP_MCP_NAME"] = str(params.get("name"))
    return direct_call(environ, body.encode())


def _expected(params: dict, version: str) -> DirectCall | None:
    read = _sdk_read(params, version)
    if read is None:
        return None
    return DirectCall(request_id=3, version=version, name=read[0], arguments=read[1])


@pytest.mark.parametrize("params", PARAMS, ids=json.dumps)
def test_a_plain_call_is_read_as_the_sdk_reads_it(params):
    assert _read(params, VERSION) == _expected(params, VERSION)


@pytest.mark.parametrize("meta", METAS, ids=json.dumps)
@pytest.mark.parametrize("arguments", [{"a": 1}, None, [1]], ids=json.dumps)
def test_a_call_with_meta_is_read_as_the_sdk_reads_it_each_time(meta, arguments):
    direct._meta_verdicts.clear()
    calls = [
        (VERSION, {"name": "contacts_get", "arguments": arguments, "_meta": meta}),
        (MODERN, {"name": "contacts_get", "arguments": arguments, "_meta": {**ENVELOPE, **meta}}),
    ]
    for version, params in calls:
        expected = _expected(params, version)
        # The first call finds the verdict, the second reads it back.
        assert _read(params, version) == expected
        assert _read(params, version) == expected
        # Another call with the same `_meta`.
        other = {**params, "name": "projects_list", "arguments": {}}
        assert _read(other, version) == _expected(other, version)
