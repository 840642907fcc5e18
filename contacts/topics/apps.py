from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.systemevents import SystemEventType, register_system_event_types
from contacts.hooks import register_timeline_source

_TOPIC = {"topic_id": "2b3c4d5e-6f70-4a1b-9c2d-3e4f5a6b7c8d", "topic_name": "Product news"}
# The system events this family records (`GET /webhook-event-types` lists them).
register_system_event_types(
    SystemEventType(
        name="topic.subscribed",
        description="A contact subscribed to a topic (through the API, an import or the "
        "preferences page).",
        example={**_TOPIC, "contact_id": "0190b7a2-5c1e-7b3a-9f00-3c2d1e0f4a11", "source": "api"},
    ),
    SystemEventType(
        name="topic.unsubscribed",
        description="A contact unsubscribed from a topic.",
        example={
            **_TOPIC,
            "contact_id": "0190b7a2-5c1e-7b3a-9f00-3c2d1e0f4a11",
            "source": "unsubscribe_link",
        },
    ),
)

# Its subscriptions on a contact's timeline in the staff console.
register_timeline_source("contacts.topics.timeline.subscription_timeline")


class TopicsConfig(AppConfig):
    name = "contacts.topics"
    label = "topics"
    verbose_name = "Topics"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("contacts.topics.api.tools")
