"""A tool's REST call takes what the `/mcp` request already decided (the key, its rate
limit count, a project checked for routing) and decides none of it again; nothing a
client sends can stand in for that."""

import json
from typing import Any

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

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
