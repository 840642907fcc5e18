from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools


class ContactsConfig(AppConfig):
    name = "contacts"
    verbose_name = "Contacts"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("contacts.api.tools")
