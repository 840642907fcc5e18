"""The topic endpoints as agent tools (see config.registries.agenttools)."""

from config.registries.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="topics_list",
        description=(
            "List the project's subscription topics with their default status (opt-in "
            "`unsubscribed` or opt-out `subscribed`), a page at a time (`limit`, `after`)."
        ),
        method="GET",
        path="/topics",
        listing="page",
    ),
]
