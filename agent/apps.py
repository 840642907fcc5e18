from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.partitions import PartitionedTable, register_partitioned_table

# The tool-call audit is partitioned by the time of the call; it has no retention policy
# yet, so its partitions are made ahead and none is dropped.
register_partitioned_table(
    PartitionedTable(
        table="agent_toolcall",
        column="created_at",
        retention_days="agent.services.tool_calls_retention_days",
    )
)


class AgentConfig(AppConfig):
    """The agent interface: `POST /mcp` serves every family's tools to MCP clients."""

    name = "agent"
    verbose_name = "Agent interface (MCP)"

    def ready(self) -> None:
        # Its own tool: executing a prepared action of any family.
        register_agent_tools("agent.tools")
