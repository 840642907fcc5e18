from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.outbox import (
    register_system_event_statement,
    register_system_event_writer,
    register_system_events_committed,
)
from config.registries.partitions import PartitionedTable, register_partitioned_table
from contacts.hooks import register_timeline_source

# Lower families record system events through config.registries.outbox; this is its writer.
register_system_event_writer("events.services.system.emit_system_events")
# ... and the same rows' `INSERT` for a change and its events written in one statement.
register_system_event_statement("events.services.system.system_events_insert_sql")
# ... and, after the commit of a transaction that recorded some, the event workers' wake-up.
register_system_events_committed("events.wake.events_wake")
# The events table is partitioned by acceptance time; a partition goes once no project's
# `event_retention_days` keeps its rows, with their idempotency keys.
register_partitioned_table(
    PartitionedTable(
        table="events_event",
        column="created_at",
        retention_days="events.services.retention.events_longest_retention_days",
        before_drop="events.services.retention.event_keys_drop",
    )
)
# A contact's events on its timeline in the staff console.
register_timeline_source("events.timeline.event_timeline")


class EventsConfig(AppConfig):
    name = "events"
    verbose_name = "Events"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("events.api.tools")
