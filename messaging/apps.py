from anymail.signals import tracking
from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.console import register_dashboard_section
from config.registries.hooks import ByPath
from contacts.hooks import register_timeline_source
from tenancy.preparedactions.registry import Operation, register

# ESP tracking webhooks (/webhooks/email/<esp>) reach us through django-anymail's signal,
# its one integration point; the receiver hands each normalised event to a service.
tracking.connect(
    ByPath("messaging.webhooks.receivers.esp_tracking_received"),
    weak=False,
    dispatch_uid="messaging.esp_tracking_received",
)

# A contact's emails on its timeline in the staff console, and the campaigns waiting for
# review and the last 30 days of email figures on its dashboard.
register_timeline_source("messaging.timeline.email_timeline")
register_dashboard_section("messaging.console.campaigns_awaiting_review")
register_dashboard_section("messaging.console.email_deliverability")
# CONTRACT section 2's scope for sends, spelled out because tenancy.models (where `Scope`
# lives) cannot be imported before the app registry is ready; a test checks it is
# `Scope.MESSAGES_SEND`.
SEND_SCOPE = "messages.send"


class MessagingConfig(AppConfig):
    name = "messaging"
    verbose_name = "Messaging"

    def ready(self) -> None:
        # Personal keys send a campaign in two steps (prepare, execute); named by path,
        # imported at first use.
        register(
            Operation(
                name="campaigns.send",
                scope=SEND_SCOPE,
                effects="messaging.api.operations.send_effects",
                execute="messaging.api.operations.send_execute",
            )
        )
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("messaging.api.tools")
