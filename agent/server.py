"""The MCP server: the SDK's low-level server serving the registered tools, driven by the
SDK's stateless Streamable HTTP session manager in JSON-response mode.

The service runs under WSGI; the SDK's transport is ASGI. Each web process keeps one event
loop on a thread of its own, started at the first MCP request, on which the session
manager runs for the life of the process. A request's thread hands the manager the ASGI
form of its request and waits; whatever a handler must run against Django (the tool call,
the audit row) is handed back to that same thread, which runs it while it waits (asgiref's
CurrentThreadExecutor), so database work keeps the request's own connection and the loop
never blocks on it. Stateless mode keeps nothing between requests, so any process answers
any call.
"""

import asyncio
import functools
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types
import orjson
from asgiref.current_thread_executor import CurrentThreadExecutor
from django.conf import settings
from django.http import HttpRequest
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from agent.catalog import catalog
from agent.services import tool_call_perform
from tenancy.access import KeyRecord

logger = logging.getLogger(__name__)

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
STARTUP_SECONDS = 30


@dataclass(frozen=True)
class CallScope:
    """What the handlers of one HTTP request need: its key, the request (for the tool's
    REST call) and the executor that runs work on the request's thread."""

    key: KeyRecord
    request: HttpRequest
    executor: CurrentThreadExecutor


async def _on_request_thread(call: CallScope, function: Callable[[], T]) -> T:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(call.executor, function)


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
    tools = await _on_request_thread(call, lambda: catalog().tool_list)
    return types.ListToolsResult(tools=tools)


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    call = _call_scope(ctx)
    outcome = await _on_request_thread(
        call,
        functools.partial(
            tool_call_perform,
            catalog=catalog(),
            name=params.name,
            arguments=params.arguments,
            key=call.key,
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
    return Server(
        SERVER_NAME,
        version=str(settings.SPECTACULAR_SETTINGS["VERSION"]),
        instructions=INSTRUCTIONS,
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
        get_tool_input_schema=_no_header_schema,
    )


ResponseParts = tuple[int, list[tuple[bytes, bytes]], bytes]


class McpBridge:
    """One event loop per process running the session manager; requests join it from
    their own threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._manager: StreamableHTTPSessionManager | None = None
        self._pid: int | None = None

    def _started(self) -> tuple[asyncio.AbstractEventLoop, StreamableHTTPSessionManager]:
        with self._lock:
            # A forked child inherits the attributes but not the thread: start its own.
            if self._loop is None or self._manager is None or self._pid != os.getpid():
                ready = threading.Event()
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=self._run, args=(loop, ready), name="mcp-server", daemon=True
                )
                thread.start()
                if not ready.wait(STARTUP_SECONDS) or self._manager is None:
                    raise RuntimeError("The MCP server did not start.")
                self._loop, self._pid = loop, os.getpid()
            return self._loop, self._manager

    def _run(self, loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(ready))
        except Exception:
            logger.exception("The MCP server's event loop stopped")
        finally:
            self._manager = None
            loop.close()

    async def _serve(self, ready: threading.Event) -> None:
        manager = StreamableHTTPSessionManager(
            app=server_build(),
            json_response=True,
            stateless=True,
            # Callers present API keys, not cookies, and Django checks ALLOWED_HOSTS.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        async with manager.run():
            self._manager = manager
            ready.set()
            await anyio.sleep_forever()

    def serve(self, scope: dict[str, Any], body: bytes, executor: CurrentThreadExecutor) -> Any:
        """Serves one HTTP request; blocks the calling thread, running the work the
        handlers hand back to it, until the response is complete."""
        loop, manager = self._started()
        future = asyncio.run_coroutine_threadsafe(_exchange(manager, scope, body), loop)
        executor.run_until_future(future)
        return future.result()


async def _exchange(
    manager: StreamableHTTPSessionManager, scope: dict[str, Any], body: bytes
) -> ResponseParts:
    """One request through the manager's ASGI app, its response collected."""
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
        await manager.handle_request(scope, receive, send)  # type: ignore[arg-type]
    finally:
        finished.set()
    return status, headers, b"".join(chunks)


bridge = McpBridge()
