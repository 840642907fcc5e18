from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.outbox import (
    register_system_event_statement,
    register_system_event_writer,
    register_system_events_committed,
)
from contacts.hooks import register_timeline_source

# Lower families record system events through config.registries.outbox; this is its writer.
register_system_event_writer("events.services.system.emit_system_events")
# ... and the same rows' `INSERT` for a change and its events written in one statement.
register_system_event_statement("events.services.system.system_events_insert_sql")
# ... and, after the commit of a transaction that recorded some, the event workers' wake-up.
register_system_events_committed("events.wake.events_wake")
# A contact's events on its timeline in the staff console.
register_timeline_source("events.timeline.event_timeline")


class EventsConfig(AppConfig):
    name = "events"
    verbose_name = "Events"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("events.api.tools")
