from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.systemevents import SystemEventType, register_system_event_types
from contacts.hooks import register_contact_deleted_handler, register_timeline_source

_AUDIENCE = {"audience_id": "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b", "audience_name": "Beta testers"}
# The system events this family records (`GET /webhook-event-types` lists them).
register_system_event_types(
    SystemEventType(
        name="audience.entered",
        description="A contact joined an audience.",
        example={
            **_AUDIENCE,
            "contact_id": "0190b7a2-5c1e-7b3a-9f00-3c2d1e0f4a11",
            "properties": {"plan": "pro"},
        },
    ),
    SystemEventType(
        name="audience.left",
        description="A contact left an audience.",
        example={**_AUDIENCE, "contact_id": "0190b7a2-5c1e-7b3a-9f00-3c2d1e0f4a11"},
    ),
)

# A deleted contact leaves every audience, in the deletion's transaction.
register_contact_deleted_handler("contacts.audiences.services.memberships_remove_for_contact")

# Its memberships on a contact's timeline in the staff console.
register_timeline_source("contacts.audiences.timeline.membership_timeline")


class AudiencesConfig(AppConfig):
    name = "contacts.audiences"
    label = "audiences"
    verbose_name = "Audiences"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("contacts.audiences.api.tools")
