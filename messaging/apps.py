from anymail.signals import tracking
from django.apps import AppConfig

from config.agenttools import register_agent_tools
from config.hooks import ByPath

# ESP tracking webhooks (/webhooks/email/<esp>) reach us through django-anymail's signal,
# its one integration point; the receiver hands each normalised event to a service.
tracking.connect(
    ByPath("messaging.webhooks.receivers.esp_tracking_received"),
    weak=False,
    dispatch_uid="messaging.esp_tracking_received",
)


class MessagingConfig(AppConfig):
    name = "messaging"
    verbose_name = "Messaging"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("messaging.api.tools")
