"""The MCP server: the SDK's low-level server serving the registered tools, driven by the
SDK's stateless Streamable HTTP session manager in JSON-response mode.

The service runs under WSGI; the SDK's transport is ASGI. A request's own thread runs an
event loop (one per thread, reused) until the SDK has answered: a fresh session manager
serves the one request, then stops. Whatever a handler must run against Django (the tool
call, its audit row) is queued and run on that thread between two turns of the loop,
while no loop is running, so Django's ORM runs as it does in any view (its own thread,
its own connection) and nothing crosses threads. Stateless mode keeps nothing between
requests, so any thread of any process answers any call.
"""

import asyncio
import functools
import threading
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import mcp_types as types
import orjson
from django.conf import settings
from django.http import HttpRequest
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from agent.catalog import catalog
from agent.services import tool_call_perform
from tenancy.access import KeyRecord
from tenancy.ratelimit import RateDecision

T = TypeVar("T")

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
    text = orjson.dumps(outcome.structured).decode()
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=outcome.structured,
        is_error=outcome.is_error,
    )


def _no_header_schema(name: str) -> None:
    # No argument is mirrored into `Mcp-Param-*` headers, so there is nothing to check
    # there; without this the SDK would run `tools/list` before each 2026-era call.
    return None


def server_build() -> Server[Any]:
    server: Server[Any] = Server(
        SERVER_NAME,
        version=str(settings.SPECTACULAR_SETTINGS["VERSION"]),
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


def _shared_server() -> Server[Any]:
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

    async def send(message: dict[str, Any]) -> None:
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
            app=_shared_server(),
            json_response=True,
            stateless=True,
            security_settings=_SECURITY,
        )
        async with manager.run():
            await manager.handle_request(scope, receive, send)  # type: ignore[arg-type]
    finally:
        finished.set()
        # Answered or failed: the thread stops turning the loop (see `serve`).
        scope[SCOPE_KEY].jobs.wake_up()
    return status, headers, b"".join(chunks)
