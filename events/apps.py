from django.apps import AppConfig

from config.outbox import register_system_event_writer

# Lower families record system events through config.outbox; this is its writer.
register_system_event_writer("events.services.system.emit_system_events")


class EventsConfig(AppConfig):
    name = "events"
    verbose_name = "Events"
