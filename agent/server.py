"""The MCP server: the SDK's low-level server serving the registered tools, driven by the
SDK's stateless Streamable HTTP session manager in JSON-response mode.

The service runs under WSGI; the SDK's transport is ASGI. A request's own thread runs an
event loop (one per thread, reused) until the SDK has answered: a 2025-era request that
gets one JSON answer (a tool call, a listing) goes straight to the SDK's single-exchange
driver (`serve_one`, as the 2026-era entry does), and anything else to a fresh session
manager that serves the one request, then stops. Whatever a handler must run against
Django (the tool call, its audit row) is queued and run on that thread between two turns
of the loop, while no loop is running, so Django's ORM runs as it does in any view (its
own thread, its own connection) and nothing crosses threads. Stateless mode keeps nothing between
requests, so any thread of any process answers any call.

A tool call that comes on the lean path is answered by `agent.direct` without any of this;
what reaches this module is what that path leaves to the SDK.
"""

import asyncio
import functools
import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import mcp_types as types
import orjson
import pydantic_core
from django.http import HttpRequest
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import (
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request

from agent import conf
from agent.catalog import catalog
from agent.services import tool_call_perform
from tenancy.access import KeyRecord
from tenancy.ratelimit import RateDecision

T = TypeVar("T")

logger = logging.getLogger(__name__)

SERVER_NAME = "sendrealm"
INSTRUCTIONS = (
    "Tools act on one project of the user's: call `projects_list` first, then give "
    "`project_id` to every other tool. A result carries what the REST API answers (`data`; "
    "lists as `{items, metadata}`, with `metadata.next` as the next page's `after`). A "
    "failure is a result with `isError` and an error object `{code, message, details, "
    "issues}`, whose issue paths name the arguments at fault. Live changes (publishing, "
    "pausing, resuming or archiving an automation) take two steps: a prepare tool shows "
    "their effects, then `prepared_action_execute` makes them."
)
# The ASGI scope member that carries a request's own state to the handlers.
SCOPE_KEY = "sendrealm.call"


@dataclass
class Jobs:
    """Synchronous work the handlers hand to the request's thread, run while its loop
    is paused (see `serve`)."""

    queue: deque[tuple[Callable[[], Any], asyncio.Future[Any]]] = field(default_factory=deque)
    wake: asyncio.Future[None] | None = None

    async def run(self, function: Callable[[], T]) -> T:
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self.queue.append((function, future))
        self.wake_up()
        return await future

    def wake_up(self) -> None:
        """Stops the loop's turn: there is work for the thread, or the answer is ready."""
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)

    def drain(self) -> None:
        while self.queue:
            function, future = self.queue.popleft()
            if future.cancelled():
                continue
            try:
                result = function()
            except Exception as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)


@dataclass(frozen=True)
class CallScope:
    """What the handlers of one HTTP request need: its key and rate limit decision, the
    request (for the tool's REST call) and the queue of work for the request's thread."""

    key: KeyRecord
    rate_limit: RateDecision | None
    request: HttpRequest
    jobs: Jobs = field(default_factory=Jobs)


def _call_scope(ctx: ServerRequestContext[Any, Any]) -> CallScope:
    request = ctx.request
    call = request.scope.get(SCOPE_KEY) if request is not None else None
    if not isinstance(call, CallScope):
        raise RuntimeError("MCP request served outside the /mcp view")
    return call


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    call = _call_scope(ctx)
    # The schemas come from the OpenAPI document, generated on the request's thread.
    tools = await call.jobs.run(lambda: catalog().tool_list)
    return types.ListToolsResult(tools=tools)


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    call = _call_scope(ctx)
    outcome = await call.jobs.run(
        functools.partial(
            tool_call_perform,
            catalog=catalog(),
            name=params.name,
            arguments=params.arguments,
            key=call.key,
            rate_limit=call.rate_limit,
            outer=call.request,
        ),
    )
    # The same object as text, for clients that read only `content`.
    content: list[types.ContentBlock] = [
        types.TextContent(text=orjson.dumps(outcome.structured).decode())
    ]
    if outcome.structured is None:
        # Data that is `null`: only the text says it, since structured content is an
        # object (a member set to null would be sent as `"structuredContent": null`).
        return types.CallToolResult(content=content, is_error=outcome.is_error)
    return types.CallToolResult(
        content=content, structured_content=outcome.structured, is_error=outcome.is_error
    )


def _no_header_schema(name: str) -> None:
    # No argument is mirrored into `Mcp-Param-*` headers, so there is nothing to check
    # there; without this the SDK would run `tools/list` before each 2026-era call.
    return None


def server_build() -> Server[Any]:
    server: Server[Any] = Server(
        SERVER_NAME,
        version=conf.api_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
        get_tool_input_schema=_no_header_schema,
    )
    # The SDK wraps each message in an OpenTelemetry span by default; this service exports
    # no traces, so the span would be built for nothing on every call (the SDK's opt-out).
    server.middleware = []
    return server


ResponseParts = tuple[int, list[tuple[bytes, bytes]], bytes]

# Callers present API keys, not cookies, and Django checks ALLOWED_HOSTS. Read-only to the
# SDK, so one serves every request's manager.
_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)

_server: Server[Any] | None = None
_local = threading.local()


def shared_server() -> Server[Any]:
    """The low-level server: built once per process, shared by every request's manager."""
    global _server
    if _server is None:
        _server = server_build()
    return _server


def _thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop, made at its first MCP request and closed with the thread.
    Nothing stays scheduled on it between requests."""
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _local.loop = loop
        weakref.finalize(threading.current_thread(), loop.close)
    return loop


def serve(scope: dict[str, Any], body: bytes) -> ResponseParts:
    """Serves one HTTP request on the calling thread: turns the loop until the SDK has
    answered, running the handlers' Django work in between, while no loop runs.

    Each turn runs until the one future `jobs.wake` is set: by a handler that queued work,
    or by the exchange as it ends. (Waiting on the task and a future together made a
    wrapper task and done callbacks for every turn, and anyio formats the task, callbacks
    included, each time it cancels a scope.)"""
    call: CallScope = scope[SCOPE_KEY]
    jobs = call.jobs
    loop = _thread_loop()
    jobs.wake = loop.create_future()
    task = loop.create_task(_exchange(scope, body))
    try:
        while True:
            loop.run_until_complete(jobs.wake)
            jobs.drain()
            if task.done():
                break
            jobs.wake = loop.create_future()
    finally:
        if not task.done():
            task.cancel()
            loop.run_until_complete(asyncio.wait((task,)))
    return task.result()


async def _exchange(scope: dict[str, Any], body: bytes) -> ResponseParts:
    """One request: a 2025-era call straight through the SDK's single-exchange driver
    when it is one, anything else through a session manager of its own."""
    request = Request(scope)
    message = _single_call(request, body)
    if message is None or await _SECURITY_CHECK.validate_request(request, is_post=True):
        return await _through_manager(scope, body)
    try:
        return await _single_exchange(request, message)
    finally:
        scope[SCOPE_KEY].jobs.wake_up()


# The requests `_single_call` takes: a 2025-era client's (a protocol version of the
# handshake era, or none), one JSON-RPC request other than `initialize`, as JSON.
_SECURITY_CHECK = TransportSecurityMiddleware(_SECURITY)


def _single_call(request: Request, body: bytes) -> types.JSONRPCRequest | None:
    """The JSON-RPC request of a 2025-era POST that the SDK's stateless transport would
    answer with one JSON response, read and checked as that transport reads it; None for
    anything else (other methods, bodies or headers, other eras, errors to report),
    which the session manager answers.

    The stateless transport serves such a request by building a transport, a JSON-RPC
    dispatcher, memory streams and task groups for it, then hands it to the same request
    runner `serve_one` drives: most of the CPU of a 2025-era call, none of it needed for
    one request that gets one answer (the 2026-era entry drives `serve_one` directly)."""
    if request.method != "POST" or len(body) > DEFAULT_MAX_REQUEST_BODY_SIZE:
        return None
    version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    if not check_accept_headers(request)[0]:
        return None
    try:
        message = types.jsonrpc_message_adapter.validate_python(
            pydantic_core.from_json(body), by_name=False
        )
    except ValueError:
        return None
    if not isinstance(message, types.JSONRPCRequest) or message.method == "initialize":
        return None
    return message


@dataclass
class _OneRequest:
    """The dispatch context of a single exchange, as the stateless transport gives its
    requests in JSON-response mode: the answer is the only thing the response carries, so
    there is no channel for server-to-client requests, and notifications are dropped."""

    transport: TransportContext
    request_id: types.RequestId
    message_metadata: ServerMessageMetadata
    progress_token: types.ProgressToken | None = None
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = False

    async def send_raw_request(
        self, method: str, params: Any, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Any, opts: CallOptions | None = None) -> None:
        return None

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None


async def _single_exchange(request: Request, message: types.JSONRPCRequest) -> ResponseParts:
    """Answers a `_single_call` as the stateless transport does: the request runner's
    result, or its error mapped as the SDK's JSON-RPC dispatcher maps it (an `MCPError`
    as itself, invalid parameters, else code 0 with the message), as one JSON body."""
    server = shared_server()
    version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, types.DEFAULT_NEGOTIATED_VERSION)
    context = _OneRequest(
        transport=TransportContext(kind="streamable-http", can_send_request=False),
        request_id=message.id,
        message_metadata=ServerMessageMetadata(request_context=request, can_send_request=False),
        progress_token=progress_token_from_params(message.params),
    )
    reply: types.JSONRPCResponse | types.JSONRPCError
    async with server.lifespan(server) as state:
        try:
            result = await serve_one(
                server,
                context,
                message.method,
                message.params,
                connection=Connection.from_envelope(version, None, None),
                lifespan_state=state,
            )
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                logger.exception("MCP handler for %r raised", message.method)
                error = types.ErrorData(code=0, message=str(exc))
            reply = types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
        else:
            reply = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
    body = reply.model_dump_json(by_alias=True, exclude_unset=True).encode()
    return 200, [(b"content-type", b"application/json")], body


async def _through_manager(scope: dict[str, Any], body: bytes) -> ResponseParts:
    """One request through a session manager of its own, its response collected."""
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []
    delivered = False
    finished = anyio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                finished.set()

    try:
        manager = StreamableHTTPSessionManager(
            app=shared_server(),
            json_response=True,
            stateless=True,
            security_settings=_SECURITY,
        )
        async with manager.run():
            await manager.handle_request(scope, receive, send)
    finally:
        finished.set()
        # Answered or failed: the thread stops turning the loop (see `serve`).
        scope[SCOPE_KEY].jobs.wake_up()
    return status, headers, b"".join(chunks)
