from django.apps import AppConfig

from config.agenttools import register_agent_tools


class TopicsConfig(AppConfig):
    name = "contacts.topics"
    label = "topics"
    verbose_name = "Topics"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("contacts.topics.api.tools")
