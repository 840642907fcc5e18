"""The MCP endpoint of the running product, used with the SDK's own client and the owner's
personal key: a tool call changes what the HTTP API then shows."""

import asyncio
import json
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.client import unique


async def call_tool(url: str, key: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tool in tools, sorted(tools)
        return await session.call_tool(tool, arguments)


def test_a_tool_call_with_the_official_client_upserts_a_contact(topology, personal):
    email = unique("agent-made-") + "@example.com"
    arguments = {"project_id": topology.project_id, "email": email, "fields": {"via": "mcp"}}

    url, key = f"{topology.base_url}/mcp", topology.key("personal")

    result = asyncio.run(call_tool(url, key, "contacts_upsert", arguments))

    assert result.is_error is False, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    contact = personal.post("/contacts/lookup", {"email": email})
    assert contact["fields"] == {"via": "mcp"}
    assert contact["id"] in json.dumps(result.structured_content)
