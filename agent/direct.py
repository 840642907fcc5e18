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
float). The SDK's models read a call of a name, arguments and at most a `_meta` once per
`_meta`, and its sieve each shape of result once per protocol version (below says why
that is the same). Everything else (the handshake, notifications, batches, other methods,
malformed messages, envelopes or headers the SDK refuses) goes through Django's handler to
the SDK as before. The server is stateless on both paths: it issues
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
# The parameters of a plain `tools/call` (a 2025-era client's), and with the `_meta` a
# 2026-07-28 envelope adds.
_PLAIN_PARAMS = frozenset({"name", "arguments"})
_ENVELOPED_PARAMS = frozenset({"name", "arguments", "_meta"})
# The SDK's verdicts on the `_meta`s of calls, by protocol version and the `_meta` as
# canonical JSON: a client sends the same one with every call. Past this many, all are
# forgotten.
MAX_META_VERDICTS = 256
_meta_verdicts: dict[tuple[str, bytes], bool] = {}
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
    name, arguments = params.get("name"), params.get("arguments")
    if type(name) is str and (arguments is None or type(arguments) is dict):
        # A name that is a string and arguments that are a JSON object (or none) are all
        # the SDK's checks ask of these two, and its models check each member alone (no
        # check reads two): without other members the verdict is the `_meta`'s.
        if params.keys() <= _PLAIN_PARAMS:
            return DirectCall(
                request_id=request_id, version=version, name=name, arguments=arguments
            )
        if params.keys() <= _ENVELOPED_PARAMS:
            at = (version, orjson.dumps(params["_meta"], option=orjson.OPT_SORT_KEYS))
            passes = _meta_verdicts.get(at)
            if passes is None:
                passes = _sdk_read(version, params) is not None
                if len(_meta_verdicts) >= MAX_META_VERDICTS:
                    _meta_verdicts.clear()
                _meta_verdicts[at] = passes
            if not passes:
                return None
            return DirectCall(
                request_id=request_id, version=version, name=name, arguments=arguments
            )
    typed = _sdk_read(version, params)
    if typed is None:
        return None
    return DirectCall(
        request_id=request_id, version=version, name=typed.name, arguments=typed.arguments
    )


def _sdk_read(version: str, params: dict[str, Any]) -> types.CallToolRequestParams | None:
    """The parameters as the SDK's models read them, or None when they refuse them."""
    try:
        methods.validate_client_request(TOOLS_CALL, version, params)
        return types.CallToolRequestParams.model_validate(params, by_name=False)
    except (KeyError, ValidationError):
        return None


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
    text = orjson.dumps(outcome.structured).decode()
    result = result_sieved(call.version, text, outcome.structured, is_error=outcome.is_error)
    if call.modern:
        # The identity 2026-era results carry (the SDK's stamp, made once per process).
        result["_meta"] = {types.SERVER_INFO_META_KEY: _server_info()}
    return 200, orjson.dumps({"jsonrpc": "2.0", "id": call.request_id, "result": result})


# What the SDK's sieve makes of a result of each shape (protocol version, error or not,
# structured content or none), found by sieving a result of that shape whose text and
# structured content are markers: the sieve keeps or drops members by the version's schema
# and passes a text and an object of JSON values through as they are, so the real ones
# take the markers' places. Sieving the real result walked every value of the object, the
# largest step of a tool call's answer after the call itself.
_TEXT_MARKER = "\x00text"
_OBJECT_MARKER = {"\x00object": True}
_shapes: dict[tuple[str, bool, bool], dict[str, Any]] = {}


def _result(
    text: str, structured: dict[str, Any] | None, *, is_error: bool, modern: bool
) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        # Data that is `null` has only its text (structured content is an object).
        result["structuredContent"] = structured
    if modern:
        result["resultType"] = "complete"
    return result


def result_sieved(
    version: str, text: str, structured: dict[str, Any] | None, *, is_error: bool
) -> dict[str, Any]:
    """A tool result as the SDK's per-version sieve (`serialize_server_result`) gives it,
    from its text and structured content."""
    at = (version, is_error, structured is not None)
    shape = _shapes.get(at)
    if shape is None:
        marked = _result(
            _TEXT_MARKER,
            None if structured is None else _OBJECT_MARKER,
            is_error=is_error,
            modern=version in MODERN_PROTOCOL_VERSIONS,
        )
        shape = _shapes[at] = methods.serialize_server_result(TOOLS_CALL, version, marked)
    result = dict(shape)
    result["content"] = [
        {**item, "text": text} if item.get("text") == _TEXT_MARKER else item
        for item in shape["content"]
    ]
    if "structuredContent" in shape:
        result["structuredContent"] = structured
    return result


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
