from django.apps import AppConfig

from config.agenttools import register_agent_tools
from contacts.hooks import register_contact_deleted_handler

# A deleted contact leaves every audience, in the deletion's transaction.
register_contact_deleted_handler("contacts.audiences.services.memberships_remove_for_contact")


class AudiencesConfig(AppConfig):
    name = "contacts.audiences"
    label = "audiences"
    verbose_name = "Audiences"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("contacts.audiences.api.tools")
