from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.metrics import register_metrics_source
from contacts.hooks import register_contact_deleted_handler, register_timeline_source
from events.hooks import register_event_batch_handler
from tenancy.preparedactions.registry import Operation, register

# Every processed event passes here: it completes the contact's waits and starts runs.
register_event_batch_handler("automations.services.triggers.AutomationsEventBatch")
# A deleted contact's runs in progress end (canceled), like an archived automation's.
register_contact_deleted_handler("automations.services.runs.runs_of_deleted_contact")
# Runs and their steps on a contact's timeline in the staff console, with a cancel button.
register_timeline_source("automations.console.run_timeline")
# Automation runs by status at every Prometheus scrape.
register_metrics_source("automations.console.runs_by_status")

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
