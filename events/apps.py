from django.apps import AppConfig

from config.outbox import register_system_event_writer


class EventsConfig(AppConfig):
    name = "events"
    verbose_name = "Events"

    def ready(self) -> None:
        # Lower families record system events through config.outbox; this is its writer.
        from events.services.system import emit_system_event

        register_system_event_writer(emit_system_event)
