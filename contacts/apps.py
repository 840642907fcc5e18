from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.systemevents import SystemEventType, register_system_event_types

_IDENTITY = {
    "contact_id": "0190b7a2-5c1e-7b3a-9f00-3c2d1e0f4a11",
    "email": "ada@example.com",
    "external_id": "user_42",
}
# The system events this family records (`GET /webhook-event-types` lists them).
register_system_event_types(
    SystemEventType(
        name="contact.created",
        description="A contact was created: by an upsert, an import, or an event naming a new "
        "email.",
        example=_IDENTITY,
    ),
    SystemEventType(
        name="contact.updated",
        description="A contact's email, external id or fields changed.",
        example=_IDENTITY,
    ),
)


class ContactsConfig(AppConfig):
    name = "contacts"
    verbose_name = "Contacts"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("contacts.api.tools")
