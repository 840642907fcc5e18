from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from tenancy.preparedactions.registry import Operation, register

# CONTRACT section 2's scope for import commits, spelled out because tenancy.models (where
# `Scope` lives) cannot be imported before the app registry is ready; a test checks it is
# `Scope.IMPORTS_MANAGE`.
MANAGE_SCOPE = "imports.manage"


class ImportsConfig(AppConfig):
    name = "imports"
    verbose_name = "Imports"

    def ready(self) -> None:
        # The preview is the prepare of `imports.commit`; named by path, imported at first
        # use. Not a lifecycle action: the `messaging_rollout` flag does not gate it.
        register(
            Operation(
                name="imports.commit",
                scope=MANAGE_SCOPE,
                effects="imports.services.preview.import_commit_effects",
                execute="imports.api.operations.import_commit_execute",
                lifecycle=False,
            )
        )
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("imports.api.tools")
