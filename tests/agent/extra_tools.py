"""A family's tool module as a test registers it (see test_tool_schemas)."""

from config.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="contact_subscriptions_list",
        description="List a contact's status for every topic of the project, a page at a time.",
        method="GET",
        path="/contacts/{contact_id}/subscriptions",
        listing="page",
    ),
]
EXECUTE_PATHS = {"widgets.launch": "/widgets/{resource_id}/actions/launch/execute"}
