"""The tool-call audit as deployed (`AGENT_AUDIT_FLUSH_SECONDS` above 0): each process
keeps its calls' rows and writes them in one statement, from its own thread within the
interval, when a reader in the process asks (the console), and at exit. Nothing is lost
when calls come from many threads while the thread writes, and one row the database
refuses does not hold back the others."""

import datetime as dt
import time
import uuid

import pytest
from django.urls import reverse

from agent import services
from agent.dispatch import ToolOutcome
from agent.models import ToolCall
from agent.services import tool_call_record, tool_calls_flush
from tenancy.models import Role
from tenancy.selectors import api_key_record_get
from tests.agent.conftest import Mcp, tool_call_message
from tests.contacts.test_contacts_races import run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def buffered(settings):
    """An interval no test waits for; the buffer's thread takes it now."""
    settings.AGENT_AUDIT_FLUSH_SECONDS = 3600.0
    services._buffer.wake.set()
    yield
    services._buffer.flush()


def test_a_call_is_kept_by_the_process_until_it_writes_its_rows(mcp: Mcp, world, buffered):
    key = world.keys["personal_owner"]
    project = str(world.project.id)

    listed = mcp.post(tool_call_message("contacts_list", {"project_id": project}), key=key)
    refused = mcp.post(
        tool_call_message("contacts_list", {"project_id": "main"}, request_id=2), key=key
    )

    assert listed.status_code == refused.status_code == 200
    assert ToolCall.objects.count() == 0
    assert services._buffer.pending() == 2

    tool_calls_flush()

    calls = list(ToolCall.objects.order_by("created_at", "outcome").values())
    assert [(c["tool"], c["outcome"], c["status"]) for c in calls] == [
        ("contacts_list", "ok", 200),
        ("contacts_list", "validation_error", 400),
    ]
    assert [c["project_id"] for c in calls] == [world.project.id, None]
    assert {c["user_id"] for c in calls} == {world.users[Role.OWNER].id}
    assert all(c["duration_ms"] > 0 for c in calls)
    assert services._buffer.pending() == 0


def test_the_console_shows_the_calls_this_process_still_held(
    mcp: Mcp, world, buffered, admin_client
):
    key = world.keys["personal_owner"]
    mcp.post(tool_call_message("contacts_list", {"project_id": str(world.project.id)}), key=key)

    page = admin_client.get(reverse("admin:agent_toolcall_changelist"))

    assert page.status_code == 200
    assert "contacts_list" in page.content.decode()
    assert ToolCall.objects.count() == 1


def test_no_row_is_lost_when_threads_call_while_the_buffer_writes(mcp: Mcp, world, settings):
    settings.AGENT_AUDIT_FLUSH_SECONDS = 0.01
    services._buffer.wake.set()
    key = world.keys["personal_owner"]
    arguments = {"project_id": str(world.project.id)}

    def calls(index: int) -> list[int]:
        return [
            mcp.post(
                tool_call_message("contacts_list", arguments, request_id=n), key=key
            ).status_code
            for n in range(10)
        ]

    statuses = [status for batch in run_in_threads(6, calls) for status in batch]

    # Written by the buffer's own thread: nothing here flushes.
    deadline = time.monotonic() + 20
    while ToolCall.objects.count() < 60 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert statuses == [200] * 60
    assert ToolCall.objects.count() == 60
    assert ToolCall.objects.values("id").distinct().count() == 60
    assert services._buffer.pending() == 0


def test_a_row_the_database_refuses_does_not_hold_back_the_others(world, buffered, caplog):
    key = api_key_record_get(secret=world.keys["personal_owner"])
    assert key is not None
    at = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)
    fine = ToolOutcome(status=200, structured={}, is_error=False)
    # An error code longer than the column takes (64 characters).
    refused = ToolOutcome(status=400, structured={"code": "x" * 65}, is_error=True)
    for outcome in (fine, refused, fine):
        tool_call_record(
            key=key,
            project_id=str(world.project.id),
            tool="contacts_list",
            outcome=outcome,
            duration_ms=1.0,
            created_at=at,
        )

    tool_calls_flush()

    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["ok", "ok"]
    assert "Dropped a tool-call audit row" in caplog.text
    assert services._buffer.pending() == 0


def test_rows_past_the_bound_are_dropped_oldest_first(monkeypatch, caplog):
    monkeypatch.setattr(services, "MAX_HELD_ROWS", 3)
    at = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)
    rows: list[services.AuditRow] = [
        (str(uuid.uuid4()), None, None, "contacts_list", "ok", 200, float(n), at) for n in range(5)
    ]

    kept = services._newest_kept(rows)

    assert kept == rows[2:]
    assert "Dropped 2 tool-call audit rows" in caplog.text
