from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from contacts.hooks import register_timeline_source

# Its subscriptions on a contact's timeline in the staff console.
register_timeline_source("contacts.topics.timeline.subscription_timeline")


class TopicsConfig(AppConfig):
    name = "contacts.topics"
    label = "topics"
    verbose_name = "Topics"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("contacts.topics.api.tools")
