from django.apps import AppConfig

from config.outbox import register_system_event_writer
from contacts.hooks import register_timeline_source

# Lower families record system events through config.outbox; this is its writer.
register_system_event_writer("events.services.system.emit_system_events")
# A contact's events on its timeline in the staff console.
register_timeline_source("events.timeline.event_timeline")


class EventsConfig(AppConfig):
    name = "events"
    verbose_name = "Events"
