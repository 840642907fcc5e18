"""Tool input schemas come from the REST operations' OpenAPI entries, flat, and the
registry takes a family's tool module as it is."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory
from jsonschema import Draft202012Validator

from agent.catalog import catalog, catalog_forget
from agent.dispatch import tool_run
from agent.schemas import input_schema, openapi_document
from config.registries.agenttools import AgentTool, register_agent_tools, unregister_agent_tools
from tenancy.api.authentication import api_key_authenticate
from tests.automations.factories import simple_definition
from tests.contacts.factories import ContactFactory


@pytest.fixture(scope="module")
def schemas():
    return catalog().schemas


@pytest.fixture(scope="module")
def document():
    return openapi_document()


def valid(schema, arguments):
    return not list(Draft202012Validator(schema).iter_errors(arguments))


def test_every_schema_is_json_schema_with_the_project_first(schemas):
    for name, schema in schemas.items():
        Draft202012Validator.check_schema(schema)
        if name != "projects_list":
            assert next(iter(schema["properties"])) == "project_id"
            assert schema["properties"]["project_id"]["format"] == "uuid"


def test_a_body_tool_takes_the_endpoints_body_members_beside_the_project(schemas, document):
    body = document["components"]["schemas"]["ContactUpsertRequest"]
    schema = schemas["contacts_upsert"]

    assert list(schema["properties"]) == ["project_id", *body["properties"]]
    assert schema["required"] == ["project_id", "email"]
    assert schema["properties"]["email"] == body["properties"]["email"]
    # OpenAPI's `nullable` is JSON Schema's null type.
    assert schema["properties"]["external_id"]["type"] == ["string", "null"]
    project_id = "00000000-0000-4000-8000-000000000001"
    assert valid(schema, {"project_id": project_id, "email": "a@example.com"})
    assert not valid(schema, {"project_id": project_id, "email": "a@example.com", "x": 1})
    assert not valid(schema, {"email": "a@example.com"})


def test_rules_across_members_carry_over(schemas):
    lookup = schemas["contacts_lookup"]
    update = schemas["contacts_update"]
    project_id = "00000000-0000-4000-8000-000000000001"
    contact_id = "00000000-0000-4000-8000-000000000002"

    assert lookup["oneOf"] == [{"required": ["email"]}, {"required": ["external_id"]}]
    assert not valid(lookup, {"project_id": project_id})
    assert not valid(lookup, {"project_id": project_id, "email": "a@b.co", "external_id": "x"})
    # "At least one member" of the PATCH body, once the body sits beside the ids.
    assert update["anyOf"] == [
        {"required": ["email"]},
        {"required": ["fields"]},
        {"required": ["external_id"]},
    ]
    assert not valid(update, {"project_id": project_id, "contact_id": contact_id})
    assert valid(update, {"project_id": project_id, "contact_id": contact_id, "fields": {}})


def test_path_ids_and_query_parameters_are_arguments(schemas):
    runs = schemas["automation_runs_list"]
    providers = schemas["push_providers_list"]
    prepare = schemas["automation_action_prepare"]

    assert list(runs["properties"]) == [
        "project_id",
        "automation_id",
        "status",
        "contact_id",
        "execution_mode",
        "created_after",
        "created_before",
        "limit",
        "after",
    ]
    assert runs["required"] == ["project_id", "automation_id"]
    assert runs["properties"]["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "default": 20,
        "description": "Items per page, 1 to 100; outside that range is 400.",
    }
    assert "app_id" in providers["properties"]
    assert "app_ref" not in providers["properties"]
    assert set(prepare["properties"]["action"]["enum"]) == {"publish", "pause", "resume", "archive"}
    assert prepare["required"] == ["project_id", "automation_id", "action"]


def test_execute_takes_only_the_preparation_and_the_key(schemas):
    schema = schemas["prepared_action_execute"]

    assert list(schema["properties"]) == ["project_id", "prepared_action_id", "idempotency_key"]
    assert set(schema["required"]) == {"project_id", "prepared_action_id", "idempotency_key"}


def test_an_automation_definition_is_described_by_its_own_schema(schemas):
    schema = schemas["automations_create"]
    project_id = "00000000-0000-4000-8000-000000000001"

    assert schema["properties"]["definition"]["required"] == ["trigger", "start", "steps"]
    assert any(name.startswith("definition.") for name in schema["$defs"])
    assert valid(schema, {"project_id": project_id, "name": "A", "definition": simple_definition()})
    wrong = simple_definition()
    wrong["steps"][0]["type"] = "teleport"
    assert not valid(schema, {"project_id": project_id, "name": "A", "definition": wrong})


@pytest.fixture
def extra_tools():
    register_agent_tools("tests.agent.extra_tools")
    catalog_forget()
    yield catalog()
    unregister_agent_tools("tests.agent.extra_tools")
    catalog_forget()


def test_a_familys_tool_module_adds_its_tools_and_execute_paths(extra_tools):
    assert "contact_subscriptions_list" in extra_tools.tools
    assert extra_tools.execute_paths["widgets.launch"] == (
        "/widgets/{resource_id}/actions/launch/execute"
    )
    schema = extra_tools.schemas["contact_subscriptions_list"]
    assert list(schema["properties"]) == ["project_id", "contact_id", "limit", "after"]


def test_without_the_module_its_tools_are_gone(extra_tools):
    unregister_agent_tools("tests.agent.extra_tools")
    catalog_forget()

    assert "contact_subscriptions_list" not in catalog().tools


@pytest.mark.django_db
def test_a_routed_tool_calls_the_path_its_operation_names(world, extra_tools):
    authorization = f"Bearer {world.keys['personal_owner']}"
    key = api_key_authenticate(authorization)
    contact = ContactFactory(project=world.project, email="ada@example.com")
    outer = RequestFactory().post("/mcp", HTTP_AUTHORIZATION=authorization)

    found = tool_run(
        catalog=extra_tools,
        name="widget_lookup",
        arguments={"project_id": str(world.project.id), "email": "ada@example.com"},
        key=key,
        rate_limit=None,
        outer=outer,
    )
    elsewhere = tool_run(
        catalog=extra_tools,
        name="widget_lookup",
        arguments={"project_id": str(world.foreign_project.id), "email": "ada@example.com"},
        key=key,
        rate_limit=None,
        outer=outer,
    )

    assert found.structured is not None
    assert found.structured["id"] == str(contact.id)
    # The project is checked before anything is routed.
    assert (elsewhere.is_error, elsewhere.structured["code"]) == (True, "forbidden")


def test_a_tool_must_name_an_operation_the_api_has(document):
    missing = AgentTool(name="x", description="x", method="GET", path="/nowhere")
    wrong_query = AgentTool(
        name="y", description="y", method="GET", path="/contacts", query=("order",)
    )

    with pytest.raises(ImproperlyConfigured, match="/nowhere"):
        input_schema(missing, document)
    with pytest.raises(ImproperlyConfigured, match="order"):
        input_schema(wrong_query, document)


def test_the_openapi_document_leaves_mcp_out_and_says_where_it_is(document):
    assert "/mcp" not in document["paths"]
    assert "`POST /mcp`" in document["info"]["description"]
