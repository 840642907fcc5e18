"""Account discovery as an agent tool (see config.registries.agenttools)."""

from config.registries.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="projects_list",
        description=(
            "List the projects this key can reach. Every other tool takes one of their ids as "
            "`project_id`; call this first to learn them."
        ),
        method="GET",
        path="/projects",
        listing="page",
        project_scoped=False,
    ),
]
