"""A tool's REST call takes what the `/mcp` request already decided (the key, its rate
limit count, a project checked for routing) and decides none of it again; nothing a
client sends can stand in for that."""

import json
import re
import uuid
from typing import Any

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import resolve
from rest_framework.views import APIView

from agent.catalog import catalog
from agent.dispatch import _resolved
from agent.schemas import path_arguments
from tenancy.api.authentication import (
    Settled,
    api_key_authenticate,
    request_settle,
    request_settled,
    settled_project,
)
from tenancy.api.permissions import project_access
from tests.automations.factories import AutomationFactory
from tests.conftest import Api
from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db

HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def tool_call(api: Api, key: str, name: str, arguments: dict[str, Any]) -> Any:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return api.post("/mcp", body, key=key, headers=HEADERS)


def result(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    return json.loads(response.content)["result"]


def test_a_tool_call_counts_once_against_the_keys_rate_limit(api, world, clock, settings):
    settings.API_RATE_LIMIT = 2
    key = world.keys["personal_owner"]
    contact = ContactFactory(project=world.project)
    arguments = {"project_id": str(world.project.id), "contact_id": str(contact.id)}

    answers = [tool_call(api, key, "contacts_get", arguments) for _ in range(3)]

    assert [a.status_code for a in answers] == [200, 200, 429]
    assert [result(a)["isError"] for a in answers[:2]] == [False, False]
    assert [a.headers["RateLimit-Remaining"] for a in answers] == ["1", "0", "0"]


def test_a_routed_tool_checks_the_project_once(api, world):
    key = world.keys["personal_owner"]
    automation = AutomationFactory(project=world.project)
    p = {"project_id": str(world.project.id)}
    prepared = result(
        tool_call(
            api,
            key,
            "automation_action_prepare",
            {**p, "automation_id": str(automation.id), "action": "publish"},
        )
    )["structuredContent"]

    with CaptureQueriesContext(connection) as queries:
        executed = result(
            tool_call(
                api,
                key,
                "prepared_action_execute",
                {
                    **p,
                    "prepared_action_id": prepared["prepared_action_id"],
                    "idempotency_key": "k",
                },
            )
        )

    assert executed["isError"] is False
    assert executed["structuredContent"]["status"] == "active"
    grants = [q for q in queries.captured_queries if "tenancy_projectgrant" in q["sql"]]
    assert len(grants) == 1


def test_a_request_from_a_client_is_never_settled(world):
    request = RequestFactory().get(
        "/contacts", HTTP_SETTLED_BY_SERVER="yes", HTTP_X_SETTLED_BY_SERVER="yes"
    )

    assert request_settled(request) is None


def test_a_settled_project_serves_only_its_own_key_and_project(world):
    owner = api_key_authenticate(f"Bearer {world.keys['personal_owner']}")
    admin = api_key_authenticate(f"Bearer {world.keys['personal_admin']}")
    project, access = project_access(key=owner, project_id=str(world.project.id))
    request = RequestFactory().get("/contacts")
    request_settle(request, Settled(key=owner, rate_limit=None, project=project, access=access))

    assert settled_project(request, key=owner, project_id=str(world.project.id)) == (
        project,
        access,
    )
    assert settled_project(request, key=owner, project_id=str(world.other_project.id)) is None
    assert settled_project(request, key=admin, project_id=str(world.project.id)) is None


@pytest.fixture
def drf_dispatches(monkeypatch):
    """How many times DRF's dispatch served a view (counted, then run as ever)."""
    calls: list[str] = []
    real = APIView.dispatch

    def counted(self: APIView, request: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(type(self).__name__)
        return real(self, request, *args, **kwargs)

    monkeypatch.setattr(APIView, "dispatch", counted)
    return calls


def test_a_tool_whose_endpoint_is_lean_is_served_on_the_lean_path(api, world, drf_dispatches):
    key = world.keys["personal_owner"]
    contact = ContactFactory(project=world.project, email="ada@example.com")
    project = str(world.project.id)

    found = result(
        tool_call(api, key, "contacts_get", {"project_id": project, "contact_id": str(contact.id)})
    )
    missing = result(
        tool_call(
            api, key, "contacts_get", {"project_id": project, "contact_id": str(uuid.uuid4())}
        )
    )
    upserted = result(
        tool_call(
            api, key, "contacts_upsert", {"project_id": project, "email": "grace@example.com"}
        )
    )
    refused = result(tool_call(api, key, "contacts_upsert", {"project_id": project, "email": "no"}))

    assert found["structuredContent"]["email"] == "ada@example.com"
    assert missing["isError"] is True
    assert missing["structuredContent"]["code"] == "not_found"
    assert upserted["structuredContent"]["email"] == "grace@example.com"
    assert refused["structuredContent"]["issues"][0]["path"] == "email"
    # The `/mcp` endpoint itself is a view of its own; the tools' endpoints took no DRF turn.
    assert "ContactDetailView" not in drf_dispatches
    assert "ContactUpsertView" not in drf_dispatches


def test_a_tool_whose_endpoint_is_not_lean_goes_through_drf(api, world, drf_dispatches):
    key = world.keys["personal_owner"]
    ContactFactory(project=world.project)

    listed = result(tool_call(api, key, "contacts_list", {"project_id": str(world.project.id)}))

    assert listed["isError"] is False
    assert "ContactListView" in drf_dispatches


def _filled(path: str) -> str:
    return re.sub(r"\{[a-z_]+\}", lambda _: str(uuid.uuid4()).upper(), path)


def test_every_tool_goes_where_djangos_resolver_sends_its_path():
    tools = [tool for tool in catalog().tools.values() if tool.route is None]
    # Whether a tool's route is read once or every time, each of its paths (twice over,
    # with other UUIDs) goes to the view and arguments Django resolves it to.
    for tool in tools * 2:
        if any(name in tool.path_values for name in path_arguments(tool)):
            continue
        path = _filled(tool.path)
        expected = resolve(path)

        assert _resolved(tool, path) == (expected.func, expected.kwargs), tool.name
