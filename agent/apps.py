from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools


class AgentConfig(AppConfig):
    """The agent interface: `POST /mcp` serves every family's tools to MCP clients."""

    name = "agent"
    verbose_name = "Agent interface (MCP)"

    def ready(self) -> None:
        # Its own tool: executing a prepared action of any family.
        register_agent_tools("agent.tools")
