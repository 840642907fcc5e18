from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from contacts.hooks import register_contact_deleted_handler, register_timeline_source

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
