"""A family's tool module as a test registers it (see test_tool_schemas)."""

from typing import Any

from config.registries.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="contact_subscriptions_list",
        description="List a contact's status for every topic of the project, a page at a time.",
        method="GET",
        path="/contacts/{contact_id}/subscriptions",
        listing="page",
    ),
    AgentTool(
        name="widget_lookup",
        description="A routed tool: the operation its arguments name picks the endpoint.",
        method="POST",
        path="/contacts/lookup",
        route="tests.agent.extra_tools.widget_route",
    ),
]


def widget_route(*, project: Any, access: Any, arguments: dict[str, Any]) -> tuple[str, str]:
    return "widgets.find", str(project.id)


def widget_path(*, project: Any, resource_id: str) -> str:
    # Where the path depends on the resource: here, on nothing but its project.
    assert resource_id == str(project.id)
    return "/contacts/lookup"


EXECUTE_PATHS = {
    "widgets.launch": "/widgets/{resource_id}/actions/launch/execute",
    "widgets.find": widget_path,
}
