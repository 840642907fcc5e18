"""The MCP endpoint of the running product, used with the SDK's own client and the owner's
personal key: a tool call changes what the HTTP API then shows, and its audit row reaches
the staff console from the server process that kept it."""

import asyncio
import json
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.client import Console, unique, until_value

# A row of the console's tool-call list for the tool.
UPSERT_ROW = 'class="field-tool">contacts_upsert<'


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
    console = Console(topology.base_url, behind_tls_proxy=topology.behind_tls_proxy)
    console.log_in(*topology.staff)
    calls = f"/admin/agent/toolcall/?q={topology.project_id}"
    before = console.request("GET", calls).text.count(UPSERT_ROW)

    result = asyncio.run(call_tool(url, key, "contacts_upsert", arguments))

    assert result.is_error is False, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    contact = personal.post("/contacts/lookup", {"email": email})
    assert contact["fields"] == {"via": "mcp"}
    assert contact["id"] in json.dumps(result.structured_content)
    # Written by the process that served the call within AGENT_AUDIT_FLUSH_SECONDS (1 s),
    # whichever process serves the console.
    until_value(
        lambda: console.request("GET", calls).text.count(UPSERT_ROW),
        lambda rows: rows == before + 1,
        "the tool call in the console's audit",
    )
    console.http.close()
