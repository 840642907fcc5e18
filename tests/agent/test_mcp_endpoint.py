"""`POST /mcp` over HTTP: the handshake and tool listing with the SDK's client, and what
HTTP decides before any JSON-RPC (key, method, media types) in the error envelope."""

import pytest
from jsonschema import Draft202012Validator
from mcp.shared.exceptions import MCPError

from tenancy.models import ApiKey, KeyKind, Role
from tenancy.services import api_key_revoke
from tests.agent.conftest import INITIALIZE

pytestmark = pytest.mark.django_db(transaction=True)

SERVED_TOOLS = {
    "projects_list",
    "contacts_list",
    "contacts_get",
    "contacts_lookup",
    "contacts_upsert",
    "contacts_update",
    "events_send",
    "event_types_list",
    "audiences_list",
    "topics_list",
    "templates_list",
    "templates_get",
    "templates_create",
    "templates_update",
    "templates_preview",
    "automations_list",
    "automations_get",
    "automations_create",
    "automations_update",
    "automation_runs_list",
    "automation_test_run",
    "automation_report",
    "automation_action_prepare",
    "campaigns_list",
    "campaigns_create",
    "campaign_send_prepare",
    "imports_create",
    "import_preview",
    "prepared_action_execute",
    "push_providers_list",
}


# Read-only tools whose name (given by their issue) is not `…_list` / `…_get`.
READ_ONLY_BY_NAME = frozenset({"automation_report"})


def envelope(response, status, code):
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body == {
        "status": status,
        "error": {
            "code": code,
            "message": body["error"]["message"],
            "details": body["error"]["details"],
            "issues": [],
        },
    }
    assert "jsonrpc" not in body
    return body


def test_the_handshake_names_the_server_and_its_tools(mcp, world):
    async def work(session):
        return session.server_info, (await session.list_tools()).tools

    server_info, tools = mcp.run(world.keys["personal_owner"], work)

    assert server_info.name == "sendrealm"
    assert server_info.version == "0.3.0"
    assert {tool.name for tool in tools} == SERVED_TOOLS
    for tool in tools:
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert len(tool.description) > 40, tool.name
        takes_project = "project_id" in tool.input_schema["required"]
        assert takes_project == (tool.name != "projects_list"), tool.name
        reads = tool.name.endswith(("_list", "_get")) or tool.name in READ_ONLY_BY_NAME
        assert tool.annotations.read_only_hint == reads, tool.name


def test_the_2026_protocol_discovers_and_calls_without_a_handshake(mcp, world):
    async def work(session):
        tools = (await session.list_tools()).tools
        result = await session.call_tool("projects_list", {})
        return session.protocol_version, tools, result

    version, tools, result = mcp.run(world.keys["personal_owner"], work, modern=True)

    assert version == "2026-07-28"
    assert {tool.name for tool in tools} == SERVED_TOOLS
    assert result.is_error is False
    assert {item["id"] for item in result.structured_content["items"]} == {
        str(world.project.id),
        str(world.other_project.id),
    }


def test_without_a_key_the_answer_is_401_in_the_envelope(mcp, world):
    response = mcp.post(INITIALIZE)

    envelope(response, 401, "unauthenticated")
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "authorization",
    ["Bearer sr_user_unknown", "Bearer nonsense", "Basic c3JfdXNlcl8=", "sr_user_abc"],
)
def test_an_unknown_key_is_401_in_the_envelope(mcp, world, authorization):
    response = mcp.post(INITIALIZE, Authorization=authorization)

    envelope(response, 401, "unauthenticated")


def test_a_revoked_personal_key_is_401(mcp, world):
    secret = world.keys["personal_owner"]
    api_key_revoke(api_key=ApiKey.objects.get(user=world.users[Role.OWNER], kind=KeyKind.PERSONAL))

    envelope(mcp.post(INITIALIZE, key=secret), 401, "unauthenticated")


@pytest.mark.parametrize("kind", ["project", "team", "read_only", "sending"])
def test_integration_keys_are_403_with_a_json_rpc_error(mcp, world, kind):
    response = mcp.post(INITIALIZE, key=world.keys[kind])

    assert response.status_code == 403
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    message = body["error"]["message"]
    assert body == {
        "jsonrpc": "2.0",
        "id": INITIALIZE["id"],
        "status": 403,
        "error": {
            "code": -32003,
            "message": message,
            "data": {"code": "forbidden", "message": message, "details": "", "issues": []},
        },
    }
    assert "personal key" in message
    assert "integration key" in message


def test_an_integration_key_s_refusal_names_no_id_it_could_not_read(mcp, world):
    for body in (b"{", b"[]", {"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}):
        response = mcp.post(body, key=world.keys["project"])

        assert response.status_code == 403
        assert response.json()["id"] is None


@pytest.mark.parametrize("modern", [False, True])
def test_the_official_client_shows_why_an_integration_key_is_refused(mcp, world, modern):
    async def work(session):
        return await session.list_tools()

    # The client's task groups raise what the session raised inside exception groups.
    with pytest.raises(ExceptionGroup) as raised:
        mcp.run(world.keys["project"], work, modern=modern)

    group = raised.value.subgroup(MCPError)
    assert group is not None
    (refused,) = leaves(group)
    assert isinstance(refused, MCPError)
    assert refused.code == -32003
    assert "personal key" in refused.error.message
    assert refused.error.data["code"] == "forbidden"


def leaves(group: BaseExceptionGroup) -> list[BaseException]:
    return [
        leaf
        for exception in group.exceptions
        for leaf in (
            leaves(exception) if isinstance(exception, BaseExceptionGroup) else [exception]
        )
    ]


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
def test_methods_other_than_post_are_405_after_the_key(mcp, world, method):
    response = mcp.request(method, key=world.keys["personal_owner"], Accept="text/event-stream")

    envelope(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"
    envelope(mcp.request(method), 401, "unauthenticated")


def test_a_client_that_does_not_accept_json_is_406(mcp, world):
    response = mcp.post(INITIALIZE, key=world.keys["personal_owner"], Accept="text/event-stream")

    envelope(response, 406, "not_acceptable")


def test_a_body_that_is_not_json_is_415(mcp, world):
    response = mcp.post(b"x=1", key=world.keys["personal_owner"], **{"Content-Type": "text/plain"})

    envelope(response, 415, "unsupported_media_type")


def test_once_authenticated_the_body_is_json_rpc(mcp, world):
    key = world.keys["personal_owner"]

    unparsable = mcp.post(b"{", key=key)
    initialized = mcp.post(INITIALIZE, key=key)
    unknown_method = mcp.post({"jsonrpc": "2.0", "id": 7, "method": "nope/nothing"}, key=key)

    assert unparsable.status_code == 400
    assert unparsable.json()["error"]["code"] == -32700
    assert initialized.status_code == 200
    assert initialized.json()["result"]["serverInfo"]["name"] == "sendrealm"
    # Stateless: no session to carry to the next request.
    assert "mcp-session-id" not in initialized.headers
    assert unknown_method.json()["error"]["code"] == -32601


def test_a_tools_call_needs_no_earlier_handshake_on_this_process_or_another(mcp, world):
    # Every request stands alone: a call without `initialize` before it is served.
    response = mcp.post(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "projects_list", "arguments": {}},
        },
        key=world.keys["personal_owner"],
        **{"MCP-Protocol-Version": "2025-11-25"},
    )

    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["metadata"]["total"] == 2


def test_a_key_made_for_a_user_who_left_the_team_reaches_no_project(mcp, world):
    user = world.users[Role.MEMBER]
    secret = world.keys["personal_member"]
    user.memberships.all().delete()

    result = mcp.call(secret, "contacts_list", {"project_id": str(world.project.id)})

    assert result.is_error is True
    assert result.structured_content["code"] == "forbidden"


def test_projects_list_answers_what_get_projects_answers(mcp, api, world):
    secret = world.keys["personal_outsider"]

    result = mcp.call(secret, "projects_list", {})

    rest = api.get("/projects", key=secret).json()
    assert result.structured_content == {"items": rest["data"], "metadata": rest["metadata"]}
    assert [item["id"] for item in rest["data"]] == [str(world.foreign_project.id)]
