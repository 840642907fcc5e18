"""The tools through the SDK's client: each answers what its REST endpoint answers, checks
the project as the header is checked, fails as a result with argument-named issues, makes
live changes only through prepare and execute, and leaves an audit record."""

import uuid

import pytest

from agent.models import ToolCall
from automations.models import Automation, AutomationStatus
from tenancy.models import KeyKind, Role, Scope
from tenancy.services import api_key_create, team_set_rollout
from tests.agent.conftest import data, error
from tests.automations.factories import AutomationFactory, simple_definition
from tests.contacts.audiences.factories import AudienceFactory
from tests.contacts.factories import ContactFactory
from tests.contacts.topics.factories import TopicFactory
from tests.pushproviders.factories import PushProviderFactory

pytestmark = pytest.mark.django_db(transaction=True)


def issues(result):
    return {(issue["path"], issue["code"]) for issue in error(result)["issues"]}


@pytest.fixture
def owner(world):
    return world.keys["personal_owner"]


@pytest.fixture
def project_id(world):
    return str(world.project.id)


def test_every_tool_answers_what_its_endpoint_answers(mcp, api, world, owner, project_id):
    audience = AudienceFactory(project=world.project)
    topic = TopicFactory(project=world.project)
    provider = PushProviderFactory(app__project=world.project)
    ContactFactory(project=world.other_project)
    p = {"project_id": project_id}

    def rest(path, **params):
        return api.get(path, params or None, key=owner, project=project_id).json()

    async def work(session):
        results = {}

        async def call(label, tool, **arguments):
            results[label] = await session.call_tool(tool, arguments)
            return results[label]

        await call("projects", "projects_list")
        created = data(await call("upsert", "contacts_upsert", **p, email="Ada@Example.com"))
        contact_id = created["id"]
        await call("upsert_again", "contacts_upsert", **p, email="ada@example.com")
        await call("lookup", "contacts_lookup", **p, email="ADA@example.com")
        await call("lookup_none", "contacts_lookup", **p, external_id="nobody")
        await call(
            "update", "contacts_update", **p, contact_id=contact_id, fields={"first_name": "Ada"}
        )
        await call("get", "contacts_get", **p, contact_id=contact_id)
        await call("second", "contacts_upsert", **p, email="grace@example.com")
        first_page = data(await call("page1", "contacts_list", **p, limit=1))
        await call("page2", "contacts_list", **p, limit=1, after=first_page["metadata"]["next"])
        await call(
            "event",
            "events_send",
            **p,
            event="order.completed",
            email="ada@example.com",
            payload={"order_id": "o-1", "total": 42},
            idempotency_key="order-o-1",
        )
        await call(
            "event_again",
            "events_send",
            **p,
            event="order.completed",
            email="ada@example.com",
            idempotency_key="order-o-1",
        )
        await call("event_types", "event_types_list", **p, source="customer", search="order")
        await call("audiences", "audiences_list", **p)
        await call("topics", "topics_list", **p)
        template = data(
            await call(
                "template",
                "templates_create",
                **p,
                name="Welcome",
                channel="email",
                subject="Hi {{ contact.fields.first_name }}",
                html="<p>Order {{ event.payload.order_id }}</p>",
                text="Order {{ event.payload.order_id }}",
            )
        )
        await call(
            "template_update",
            "templates_update",
            **p,
            template_id=template["id"],
            subject="Hello {{ contact.fields.first_name }}",
        )
        await call("template_get", "templates_get", **p, template_id=template["id"])
        await call(
            "preview",
            "templates_preview",
            **p,
            template_id=template["id"],
            contact_id=contact_id,
            event={"event": "order.completed", "payload": {"order_id": "o-9"}},
        )
        await call("templates", "templates_list", **p)
        await call("providers", "push_providers_list", **p, app_id=provider.app.public_id)
        automation = data(
            await call(
                "automation",
                "automations_create",
                **p,
                name="Follow up",
                definition=simple_definition(),
            )
        )
        automation_id = automation["id"]
        await call(
            "automation_update",
            "automations_update",
            **p,
            automation_id=automation_id,
            description="Waits a day.",
        )
        await call("automation_get", "automations_get", **p, automation_id=automation_id)
        await call("automations", "automations_list", **p)
        await call(
            "test_run",
            "automation_test_run",
            **p,
            automation_id=automation_id,
            email="ada@example.com",
            payload={"order_id": "o-2"},
        )
        await call(
            "runs", "automation_runs_list", **p, automation_id=automation_id, execution_mode="test"
        )
        await call("report", "automation_report", **p, automation_id=automation_id, to="2026-12-31")
        prepared = data(
            await call(
                "prepare",
                "automation_action_prepare",
                **p,
                automation_id=automation_id,
                action="publish",
            )
        )
        await call(
            "execute",
            "prepared_action_execute",
            **p,
            prepared_action_id=prepared["prepared_action_id"],
            idempotency_key="publish-1",
        )
        return results

    r = mcp.run(owner, work)
    for label, result in r.items():
        assert result.is_error is False, (label, result.structured_content)

    projects = rest("/projects")
    assert data(r["projects"]) == {"items": projects["data"], "metadata": projects["metadata"]}
    contact = data(r["get"])
    assert data(r["upsert"])["created"] is True
    assert data(r["upsert_again"]) == {**data(r["upsert"]), "created": False}
    assert contact["email"] == "ada@example.com"
    assert contact["fields"] == {"first_name": "Ada"}
    assert contact == rest(f"/contacts/{contact['id']}")["data"]
    assert data(r["update"]) == contact
    looked_up = {k: v for k, v in data(r["upsert_again"]).items() if k != "created"}

    def lookup(**body):
        return api.post("/contacts/lookup", body, key=owner, project=project_id).json()["data"]

    # The lookup's result is the endpoint's data as it is: the contact, or null (no
    # structured content, since MCP's is an object, and the text `null`).
    assert data(r["lookup"]) == looked_up
    assert lookup(email="ADA@example.com") == contact  # as updated since
    assert lookup(external_id="nobody") is None
    assert r["lookup_none"].structured_content is None
    assert r["lookup_none"].content[0].text == "null"
    page1, page2 = data(r["page1"]), data(r["page2"])
    assert page1["metadata"]["total"] == 2
    assert [c["email"] for c in page1["items"] + page2["items"]] == [
        "ada@example.com",
        "grace@example.com",
    ]
    assert page2["metadata"]["next"] is None
    # A cursor read over MCP is the REST list's own.
    assert rest("/contacts", limit=1, after=page1["metadata"]["next"])["data"] == page2["items"]
    event, event_again = data(r["event"]), data(r["event_again"])
    assert (event["status"], event["duplicate"]) == ("accepted", False)
    assert (event_again["id"], event_again["duplicate"]) == (event["id"], True)
    event_types = rest("/event-types", source="customer", search="order")
    assert data(r["event_types"]) == {
        "items": event_types["data"],
        "metadata": event_types["metadata"],
    }
    assert [a["id"] for a in data(r["audiences"])["items"]] == [str(audience.id)]
    assert [t["id"] for t in data(r["topics"])["items"]] == [str(topic.id)]
    template = data(r["template_get"])
    assert template == rest(f"/templates/{template['id']}")["data"]
    assert [t["id"] for t in data(r["templates"])["items"]] == [template["id"]]
    assert data(r["preview"])["rendered"]["subject"] == "Hello Ada"
    assert data(r["preview"])["rendered"]["text"] == "Order o-9"
    assert data(r["providers"]) == {
        "items": rest(f"/push/apps/{provider.app.public_id}/providers")["data"],
        "metadata": None,
    }
    assert data(r["automation"])["status"] == "draft"
    assert data(r["automation_update"])["description"] == "Waits a day."
    assert data(r["automations"])["items"][0]["id"] == data(r["automation"])["id"]
    test_run = data(r["test_run"])
    assert (test_run["execution_mode"], test_run["status"]) == ("test", "completed")
    assert data(r["runs"])["items"] == [test_run]
    report = rest(f"/automations/{test_run['automation_id']}/report", to="2026-12-31")
    assert data(r["report"]) == report["data"]
    assert data(r["report"])["entered"] == 0  # test runs are not counted
    assert data(r["prepare"])["operation"] == "automations.publish"
    assert data(r["prepare"])["effects"]["status"] == {"from": "draft", "to": "active"}
    assert data(r["execute"])["status"] == "active"
    automation_id = data(r["automation"])["id"]
    assert Automation.objects.get(id=automation_id).status == AutomationStatus.ACTIVE


def test_a_publish_is_prepared_then_executed_once_per_idempotency_key(mcp, world, owner):
    automation = AutomationFactory(project=world.project)
    p = {"project_id": str(world.project.id)}

    prepared = mcp.call(
        owner,
        "automation_action_prepare",
        {**p, "automation_id": str(automation.id), "action": "publish"},
    )

    assert data(prepared)["effects"]["status"] == {"from": "draft", "to": "active"}
    assert Automation.objects.get(id=automation.id).status == AutomationStatus.DRAFT
    execute = {**p, "prepared_action_id": data(prepared)["prepared_action_id"]}

    async def work(session):
        return [
            await session.call_tool("prepared_action_execute", {**execute, "idempotency_key": key})
            for key in ("k", "k", "another")
        ]

    first, again, other = mcp.run(owner, work)

    assert data(first)["status"] == "active"
    assert data(again) == data(first)
    assert error(other)["code"] == "conflict"
    assert Automation.objects.get(id=automation.id).status == AutomationStatus.ACTIVE


def test_a_preparation_runs_only_for_its_own_user_and_project(mcp, world, owner):
    automation = AutomationFactory(project=world.project)
    p = {"project_id": str(world.project.id)}
    prepared = data(
        mcp.call(
            owner,
            "automation_action_prepare",
            {**p, "automation_id": str(automation.id), "action": "publish"},
        )
    )
    execute = {"prepared_action_id": prepared["prepared_action_id"], "idempotency_key": "k"}

    teammate = mcp.call(world.keys["personal_admin"], "prepared_action_execute", {**p, **execute})
    elsewhere = mcp.call(
        owner, "prepared_action_execute", {"project_id": str(world.other_project.id), **execute}
    )
    unknown = mcp.call(
        owner,
        "prepared_action_execute",
        {**p, "prepared_action_id": str(uuid.uuid4()), "idempotency_key": "k"},
    )

    assert error(teammate)["code"] == "prepared_action_invalid"
    assert error(elsewhere)["code"] == "prepared_action_invalid"
    assert error(unknown)["code"] == "prepared_action_invalid"
    assert Automation.objects.get(id=automation.id).status == AutomationStatus.DRAFT


def test_a_lifecycle_change_is_not_allowed_in_one_step(mcp, world, owner):
    automation = AutomationFactory(project=world.project)
    p = {"project_id": str(world.project.id), "automation_id": str(automation.id)}

    # No tool changes a lifecycle directly; a prepare takes no body to smuggle one through.
    smuggled = mcp.call(
        owner, "automation_action_prepare", {**p, "action": "publish", "execute": True}
    )

    assert issues(smuggled) == {("execute", "invalid")}
    assert Automation.objects.get(id=automation.id).status == AutomationStatus.DRAFT


def test_lifecycle_tools_need_the_rollout_flag(mcp, world, owner):
    automation = AutomationFactory(project=world.project)
    team_set_rollout(team=world.team, enabled=False)

    result = mcp.call(
        owner,
        "automation_action_prepare",
        {
            "project_id": str(world.project.id),
            "automation_id": str(automation.id),
            "action": "publish",
        },
    )

    assert error(result)["code"] == "forbidden"


def test_validation_failures_are_results_whose_issues_name_the_arguments(mcp, world, owner):
    p = {"project_id": str(world.project.id)}
    automation = AutomationFactory(project=world.project)
    calls = {
        "bad_email": ("contacts_upsert", {**p, "email": "not-an-email"}),
        "unknown_member": ("contacts_upsert", {**p, "email": "a@example.com", "nickname": "A"}),
        "missing_email": ("contacts_upsert", p),
        "fields_type": ("contacts_upsert", {**p, "email": "a@example.com", "fields": "vip"}),
        "missing_id": ("contacts_get", p),
        "bad_id": ("contacts_get", {**p, "contact_id": "42"}),
        "bad_limit": ("contacts_list", {**p, "limit": 0}),
        "list_type": ("contacts_list", {**p, "limit": [1]}),
        "unknown_argument": ("contacts_list", {**p, "order": "desc"}),
        "bad_source": ("event_types_list", {**p, "source": "robots"}),
        "bad_action": (
            "automation_action_prepare",
            {**p, "automation_id": str(automation.id), "action": "explode"},
        ),
        "no_identity": ("events_send", {**p, "event": "order.completed"}),
        "bad_definition": (
            "automations_create",
            {**p, "name": "x", "definition": {"trigger": {}, "steps": []}},
        ),
        "missing_project": ("contacts_list", {}),
        "project_not_uuid": ("contacts_list", {"project_id": "main"}),
        "project_not_text": ("contacts_list", {"project_id": 7}),
        "missing_execute_key": (
            "prepared_action_execute",
            {**p, "prepared_action_id": str(uuid.uuid4())},
        ),
    }

    async def work(session):
        return {label: await session.call_tool(*call) for label, call in calls.items()}

    results = mcp.run(owner, work)

    for label, result in results.items():
        assert error(result)["code"] == "validation_error", label
    assert issues(results["bad_email"]) == {("email", "invalid_email")}
    assert issues(results["unknown_member"]) == {("nickname", "unknown_member")}
    assert issues(results["missing_email"]) == {("email", "required")}
    assert {path for path, _ in issues(results["fields_type"])} == {"fields"}
    assert issues(results["missing_id"]) == {("contact_id", "required")}
    assert issues(results["bad_id"]) == {("contact_id", "invalid_uuid")}
    assert issues(results["bad_limit"]) == {("limit", "out_of_range")}
    assert issues(results["list_type"]) == {("limit", "invalid")}
    assert issues(results["unknown_argument"]) == {("order", "unknown_member")}
    assert issues(results["bad_source"]) == {("source", "invalid_choice")}
    assert issues(results["bad_action"]) == {("action", "invalid_choice")}
    assert {path for path, _ in issues(results["no_identity"])} == {""}
    assert all(path.startswith("definition") for path, _ in issues(results["bad_definition"]))
    assert issues(results["missing_project"]) == {("project_id", "required")}
    assert {path for path, _ in issues(results["project_not_uuid"])} == {"project_id"}
    assert issues(results["project_not_text"]) == {("project_id", "invalid")}
    assert issues(results["missing_execute_key"]) == {("idempotency_key", "required")}


def test_an_unknown_tool_is_a_result_too(mcp, world, owner):
    result = mcp.call(owner, "contacts_delete_everything", {"project_id": str(world.project.id)})

    assert error(result)["code"] == "not_found"
    assert "contacts_delete_everything" in error(result)["message"]


def test_a_project_is_checked_as_the_header_is(mcp, world, owner):
    contact = ContactFactory(project=world.other_project)

    async def work(session):
        return {
            "unknown": await session.call_tool("contacts_list", {"project_id": str(uuid.uuid4())}),
            "foreign": await session.call_tool(
                "contacts_list", {"project_id": str(world.foreign_project.id)}
            ),
            "other_projects_contact": await session.call_tool(
                "contacts_get",
                {"project_id": str(world.project.id), "contact_id": str(contact.id)},
            ),
            "in_its_project": await session.call_tool(
                "contacts_get",
                {"project_id": str(world.other_project.id), "contact_id": str(contact.id)},
            ),
        }

    results = mcp.run(owner, work)

    assert error(results["unknown"])["code"] == "forbidden"
    assert error(results["foreign"])["code"] == "forbidden"
    assert error(results["other_projects_contact"])["code"] == "not_found"
    assert data(results["in_its_project"])["id"] == str(contact.id)


def test_scopes_grants_and_roles_limit_the_tools(mcp, world):
    reader = api_key_create(
        name="reader",
        team=world.team,
        kind=KeyKind.PERSONAL,
        user=world.users[Role.OWNER],
        scopes=[Scope.RESOURCES_READ],
        grants={world.project: [Scope.RESOURCES_READ, Scope.RESOURCES_WRITE]},
    )[1]
    narrow_grant = api_key_create(
        name="one project",
        team=world.team,
        kind=KeyKind.PERSONAL,
        user=world.users[Role.OWNER],
        scopes=list(Scope.values),
        grants={world.project: [Scope.RESOURCES_READ]},
    )[1]
    upsert = {"project_id": str(world.project.id), "email": "ada@example.com"}
    elsewhere = {"project_id": str(world.other_project.id)}

    assert error(mcp.call(reader, "contacts_upsert", upsert))["code"] == "forbidden"
    assert data(mcp.call(reader, "contacts_list", {"project_id": str(world.project.id)}))
    assert error(mcp.call(narrow_grant, "contacts_upsert", upsert))["code"] == "forbidden"
    assert error(mcp.call(narrow_grant, "contacts_list", elsewhere))["code"] == "forbidden"
    viewer = world.keys["personal_viewer"]
    assert error(mcp.call(viewer, "contacts_upsert", upsert))["code"] == "forbidden"
    assert "resources.write" in error(mcp.call(viewer, "contacts_upsert", upsert))["message"]
    assert data(mcp.call(viewer, "contacts_list", {"project_id": str(world.project.id)}))


def test_every_call_leaves_an_audit_record(mcp, world, owner):
    unknown_project = str(uuid.uuid4())

    async def work(session):
        await session.call_tool("projects_list", {})
        await session.call_tool(
            "contacts_upsert", {"project_id": str(world.project.id), "email": "a@example.com"}
        )
        await session.call_tool("contacts_list", {"project_id": unknown_project})
        await session.call_tool("contacts_list", {"project_id": "main"})
        await session.call_tool("no_such_tool", {})

    mcp.run(owner, work)

    calls = list(ToolCall.objects.order_by("created_at").values())
    assert [(c["tool"], c["outcome"], c["status"]) for c in calls] == [
        ("projects_list", "ok", 200),
        ("contacts_upsert", "ok", 201),
        ("contacts_list", "forbidden", 403),
        ("contacts_list", "validation_error", 400),
        ("no_such_tool", "not_found", 404),
    ]
    assert [c["project_id"] for c in calls] == [
        None,
        world.project.id,
        uuid.UUID(unknown_project),
        None,
        None,
    ]
    owner_user = world.users[Role.OWNER]
    assert {c["user_id"] for c in calls} == {owner_user.id}
    assert len({c["api_key_id"] for c in calls}) == 1
    assert all(c["duration_ms"] > 0 for c in calls)


@pytest.mark.parametrize("modern", [False, True])
def test_a_lookup_answers_the_contact_or_null_in_both_protocol_eras(mcp, world, owner, modern):
    contact = ContactFactory(project=world.project, email="ada@example.com")
    p = {"project_id": str(world.project.id)}

    async def work(session):
        return (
            await session.call_tool("contacts_lookup", {**p, "email": "ada@example.com"}),
            await session.call_tool("contacts_lookup", {**p, "email": "nobody@example.com"}),
        )

    found, missing = mcp.run(owner, work, modern=modern)

    assert data(found)["id"] == str(contact.id)
    assert "contact" not in data(found)
    assert data(found)["email"] == "ada@example.com"
    assert missing.is_error is False
    assert missing.structured_content is None
    assert missing.content[0].text == "null"
