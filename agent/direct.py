"""Tool calls answered directly: a `POST /mcp` carrying one `tools/call` is read with
orjson and answered by the tool call the SDK's handler makes (`agent.server._call_tool`,
`agent.services.tool_call_perform`), its result shaped by the SDK's own per-version sieve,
without the SDK's request machinery (its models of the message, a request runner, an
event loop turned around the call) and, on the lean path (config/api/lean.py), without
Django's handler and middleware.

Only requests whose answer is known are taken: one JSON-RPC request of `tools/call` with
parameters the SDK's own checks pass (`validate_client_request`, and for the 2026-07-28
envelope the SDK's classifier of its `_meta` and routing headers), from a client that
accepts JSON, with a JSON body and no integer beyond 64 bits (which orjson reads as a
float). Everything else (the handshake, notifications, batches, other methods, malformed
messages, envelopes or headers the SDK refuses) goes through Django's handler to the SDK
as before. The server is stateless on both paths: it issues
no `Mcp-Session-Id` and checks none (the SDK's stateless transport ignores the header).
"""

import logging
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import orjson
from django.conf import settings
from mcp.server.runner import modern_error_data
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from agent.catalog import catalog
from agent.dispatch import Outer
from agent.server import shared_server
from agent.services import tool_call_perform
from config.api.parsers import long_integers_possible
from tenancy.access import KeyRecord
from tenancy.ratelimit import RateDecision

logger = logging.getLogger(__name__)

TOOLS_CALL = "tools/call"
# Where `McpView.lean_takes` leaves the call it read for `lean_dispatch`.
ENVIRON_KEY = "sendrealm.mcp.call"
# The members of a JSON-RPC request (the SDK's model of one ignores others; a message with
# others is left to it).
_REQUEST_MEMBERS = frozenset({"jsonrpc", "id", "method", "params"})
# A JSON body as Django and the SDK both read it.
_JSON_TYPES = frozenset({"application/json", "application/json; charset=utf-8"})
# The routing headers the SDK's classifier reads, as WSGI names them.
_ROUTING_HEADERS = {
    MCP_PROTOCOL_VERSION_HEADER: "HTTP_MCP_PROTOCOL_VERSION",
    MCP_METHOD_HEADER: "HTTP_MCP_METHOD",
    MCP_NAME_HEADER: "HTTP_MCP_NAME",
}


@dataclass(frozen=True, slots=True)
class DirectCall:
    """A `tools/call` request read and checked as the SDK checks it."""

    request_id: int | str
    # The protocol version the SDK serves the call at: the header's (the default when
    # there is none) for a 2025-era client, the envelope's for a 2026-era one.
    version: str
    name: str
    arguments: dict[str, Any] | None

    @property
    def modern(self) -> bool:
        return self.version in MODERN_PROTOCOL_VERSIONS


def accepts_json(accept: str) -> bool:
    """Whether an `Accept` header takes JSON, wildcards included (the SDK's own test)."""
    for part in accept.split(","):
        media_type = part.split(";")[0].strip().lower()
        if media_type in ("application/json", "application/*", "*/*"):
            return True
    return False


def direct_call(environ: dict[str, Any], body: bytes) -> DirectCall | None:
    """The `tools/call` of a `POST /mcp` whose answer is the tool's result, read as the
    SDK reads it; None for any other request, which the SDK answers. Reads only the
    request: nothing is checked against the key or counted yet."""
    if environ.get("CONTENT_TYPE") not in _JSON_TYPES:
        return None
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if len(body) > DEFAULT_MAX_REQUEST_BODY_SIZE or (limit is not None and len(body) > limit):
        return None
    if not accepts_json(environ.get("HTTP_ACCEPT", "")) or long_integers_possible(body):
        return None
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if (
        type(message) is not dict
        or not message.keys() <= _REQUEST_MEMBERS
        or message.get("jsonrpc") != "2.0"
        or message.get("method") != TOOLS_CALL
    ):
        return None
    request_id = message.get("id")
    params = message.get("params")
    # An id the SDK reads as it is (not a boolean, a float or null).
    if not isinstance(request_id, int | str) or isinstance(request_id, bool):
        return None
    if type(params) is not dict:
        return None
    header = environ.get("HTTP_MCP_PROTOCOL_VERSION")
    if header is None or header in HANDSHAKE_PROTOCOL_VERSIONS:
        version = header or types.DEFAULT_NEGOTIATED_VERSION
    elif header in MODERN_PROTOCOL_VERSIONS:
        headers = {
            name: environ[meta] for name, meta in _ROUTING_HEADERS.items() if meta in environ
        }
        verdict = classify_inbound_request(message, headers=headers)
        if not isinstance(verdict, InboundModernRoute):
            return None
        version = verdict.protocol_version
    else:
        return None
    try:
        methods.validate_client_request(TOOLS_CALL, version, params)
        typed = types.CallToolRequestParams.model_validate(params, by_name=False)
    except (KeyError, ValidationError):
        return None
    return DirectCall(
        request_id=request_id, version=version, name=typed.name, arguments=typed.arguments
    )


def direct_answer(
    call: DirectCall, *, key: KeyRecord, rate_limit: RateDecision | None, outer: Outer
) -> tuple[int, bytes]:
    """The HTTP status and JSON-RPC body of a call's answer, as the SDK gives them."""
    try:
        outcome = tool_call_perform(
            catalog=catalog(),
            name=call.name,
            arguments=call.arguments,
            key=key,
            rate_limit=rate_limit,
            outer=outer,
        )
    except Exception as exc:
        return _failure(call, exc)
    # The same object as text, for clients that read only `content`.
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": orjson.dumps(outcome.structured).decode()}],
        "isError": outcome.is_error,
    }
    if outcome.structured is not None:
        # Data that is `null` has only its text (structured content is an object).
        result["structuredContent"] = outcome.structured
    if call.modern:
        result["resultType"] = "complete"
    result = methods.serialize_server_result(TOOLS_CALL, call.version, result)
    if call.modern:
        # The identity 2026-era results carry (the SDK's stamp, made once per process).
        result["_meta"] = {types.SERVER_INFO_META_KEY: _server_info()}
    return 200, orjson.dumps({"jsonrpc": "2.0", "id": call.request_id, "result": result})


def _failure(call: DirectCall, exc: Exception) -> tuple[int, bytes]:
    """A call that raised, mapped as the SDK maps it: the 2025-era single exchange as its
    JSON-RPC dispatcher does (code 0 with the message for anything but the SDK's own
    errors), the 2026-era entry to its error codes and their HTTP statuses."""
    if call.modern:
        error = modern_error_data(exc)
        reply = types.JSONRPCError(jsonrpc="2.0", id=call.request_id, error=error)
        body = reply.model_dump(mode="json", by_alias=True, exclude_none=True)
        return ERROR_CODE_HTTP_STATUS.get(error.code, 200), orjson.dumps(body)
    mapped = handler_exception_to_error_data(exc)
    if mapped is None:
        logger.exception("MCP handler for %r raised", TOOLS_CALL)
        mapped = types.ErrorData(code=0, message=str(exc))
    reply = types.JSONRPCError(jsonrpc="2.0", id=call.request_id, error=mapped)
    return 200, reply.model_dump_json(by_alias=True, exclude_unset=True).encode()


_stamp: dict[str, Any] | None = None


def _server_info() -> dict[str, Any]:
    global _stamp
    if _stamp is None:
        _stamp = shared_server().server_info_stamp
    return _stamp
