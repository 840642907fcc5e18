from django.apps import AppConfig

from config.agenttools import register_agent_tools
from tenancy.preparedactions.registry import Operation, register

# CONTRACT section 2's scope for lifecycle changes, spelled out because tenancy.models
# (where `Scope` lives) cannot be imported before the app registry is ready; a test
# checks it is `Scope.AUTOMATIONS_MANAGE`.
MANAGE_SCOPE = "automations.manage"
LIFECYCLE_ACTIONS = ("publish", "pause", "resume", "archive")


class AutomationsConfig(AppConfig):
    name = "automations"
    verbose_name = "Automations"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("automations.api.tools")
        # Prepare -> execute operations, named by path: imported at their first use.
        for action in LIFECYCLE_ACTIONS:
            register(
                Operation(
                    name=f"automations.{action}",
                    scope=MANAGE_SCOPE,
                    effects=f"automations.api.operations.{action}_effects",
                    execute=f"automations.api.operations.{action}_execute",
                )
            )
