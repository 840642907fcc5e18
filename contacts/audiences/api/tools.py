"""The audience endpoints as agent tools (see config.registries.agenttools)."""

from config.registries.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="audiences_list",
        description=(
            "List the project's audiences (named groups of contacts with typed properties), "
            "oldest first, a page at a time (`limit`, `after` = `metadata.next`)."
        ),
        method="GET",
        path="/audiences",
        listing="page",
    ),
]
