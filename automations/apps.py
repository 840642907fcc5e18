from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.metrics import register_metrics_source
from config.registries.partitions import PartitionedTable, register_partitioned_table
from contacts.hooks import register_contact_deleted_handler, register_timeline_source
from events.hooks import register_event_batch_handler
from tenancy.preparedactions.registry import Operation, register

# The storage parameters of each partition of the run steps' table.
RUN_STEP_STORAGE = "fillfactor = 70"

# Every processed event passes here: it completes the contact's waits and starts runs.
register_event_batch_handler("automations.services.triggers.AutomationsEventBatch")
# A deleted contact's runs in progress end (canceled), like an archived automation's.
register_contact_deleted_handler("automations.services.runs.runs_of_deleted_contact")
# Runs and their steps on a contact's timeline in the staff console, with a cancel button.
register_timeline_source("automations.console.run_timeline")
# Automation runs by status at every Prometheus scrape.
register_metrics_source("automations.console.runs_by_status")

# Run steps are partitioned by their run's start: a partition goes once no project's
# `run_retention_days` keeps a run of its period and no run of its period is unfinished.
# Fillfactor 70: a waiting step's later update is HOT (migration 0003).
register_partitioned_table(
    PartitionedTable(
        table="automations_runstep",
        column="run_created_at",
        retention_days="automations.services.retention.runs_longest_retention_days",
        may_drop="automations.services.retention.run_steps_partition_may_drop",
        storage=RUN_STEP_STORAGE,
    )
)

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
