"""An MCP client (the SDK's own, over HTTP) against the live test server."""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

T = TypeVar("T")

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


MODERN_VERSION = "2026-07-28"


def tool_call_message(
    name: str, arguments: Any, *, request_id: Any = 7, modern: bool = False
) -> dict[str, Any]:
    """A JSON-RPC `tools/call` request; `modern` adds the 2026-07-28 envelope."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if modern:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


class Mcp:
    """Opens SDK client sessions on `/mcp` of the live server with a given key."""

    def __init__(self, base_url: str) -> None:
        self.url = f"{base_url}/mcp"

    @contextlib.asynccontextmanager
    async def session(self, key: str, *, modern: bool = False) -> AsyncIterator[ClientSession]:
        """An initialized session (the 2025 handshake), or with `modern` the 2026-07-28
        protocol's `server/discover`."""
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(self.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            if modern:
                await session.discover()
            else:
                await session.initialize()
            yield session

    def run(self, key: str, work: Callable[[ClientSession], Awaitable[T]], **kw: Any) -> T:
        async def main() -> T:
            async with self.session(key, **kw) as session:
                return await work(session)

        return asyncio.run(main())

    def call(self, key: str, tool: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        return self.run(key, lambda session: session.call_tool(tool, arguments))

    def post(self, body: Any, *, key: str | None = None, **headers: str) -> httpx2.Response:
        """A raw HTTP POST to /mcp (what the SDK would not send)."""
        all_headers = {**MCP_HEADERS, **headers}
        if key is not None:
            all_headers["Authorization"] = f"Bearer {key}"
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx2.post(self.url, content=content, headers=all_headers, timeout=60)

    def request(self, method: str, *, key: str | None = None, **headers: str) -> httpx2.Response:
        all_headers = dict(headers)
        if key is not None:
            all_headers["Authorization"] = f"Bearer {key}"
        return httpx2.request(method, self.url, headers=all_headers, timeout=60)


@pytest.fixture
def mcp(live_server: Any) -> Mcp:
    return Mcp(live_server.url)


def data(result: CallToolResult) -> Any:
    """A successful result's structured content, which its text repeats."""
    assert result.is_error is False, result.structured_content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def error(result: CallToolResult) -> dict[str, Any]:
    """A failed result's error object, which its text repeats."""
    assert result.is_error is True, result.structured_content
    assert json.loads(result.content[0].text) == result.structured_content
    assert set(result.structured_content) == {"code", "message", "details", "issues"}
    return result.structured_content
