"""The MCP endpoint served the way production serves it: granian (WSGI) with two worker
processes, each answering any request of one client's session, since nothing is kept
between requests."""

import asyncio
from pathlib import Path

import pytest

from agent.models import ToolCall
from tests.agent.conftest import Mcp, data
from tests.processes import wait_for
from tests.test_server import Granian

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def served(tmp_path: Path):
    server = Granian(tmp_path, workers=2)
    yield server
    server.stop()
    print(server.log.read_text())  # shown when the test failed


def test_granian_workers_serve_one_session_between_them(served, world):
    wait_for(lambda: served.started() == 2, timeout=60, what="two workers serving")
    wait_for(served.healthy, timeout=30, what="the server answering")
    mcp = Mcp(served.base_url)
    project = {"project_id": str(world.project.id)}

    async def work(session):
        tools = (await session.list_tools()).tools
        results = await asyncio.gather(
            *(
                session.call_tool("contacts_upsert", {**project, "email": f"c{n}@example.com"})
                for n in range(12)
            )
        )
        listed = await session.call_tool("contacts_list", {**project, "limit": 100})
        return tools, results, listed

    tools, results, listed = mcp.run(world.keys["personal_owner"], work)

    assert len(tools) > 20
    assert all(data(result)["created"] for result in results)
    assert data(listed)["metadata"]["total"] == 12
    assert ToolCall.objects.filter(tool="contacts_upsert", outcome="ok").count() == 12


def test_workers_that_stop_write_the_audit_rows_they_kept(tmp_path: Path, world):
    # An interval no test waits for: only the workers' exit writes the rows.
    server = Granian(tmp_path, workers=2, environment={"AGENT_AUDIT_FLUSH_SECONDS": "3600"})
    try:
        wait_for(lambda: server.started() == 2, timeout=60, what="two workers serving")
        wait_for(server.healthy, timeout=30, what="the server answering")
        mcp = Mcp(server.base_url)
        project = {"project_id": str(world.project.id)}

        async def work(session):
            return await asyncio.gather(
                *(session.call_tool("contacts_list", project) for _ in range(8))
            )

        results = mcp.run(world.keys["personal_owner"], work)
        assert all(not result.is_error for result in results)
        assert ToolCall.objects.count() == 0
    finally:
        server.stop()
        print(server.log.read_text())  # shown when the test failed

    assert ToolCall.objects.filter(tool="contacts_list", outcome="ok").count() == 8
