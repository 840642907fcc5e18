from anymail.signals import tracking
from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.console import register_dashboard_section
from config.registries.hooks import ByPath
from config.registries.partitions import PartitionedTable, register_partitioned_table
from config.registries.systemevents import SystemEventType, register_system_event_types
from contacts.hooks import register_timeline_source
from tenancy.preparedactions.registry import Operation, register

# ESP tracking webhooks (/webhooks/email/<esp>) reach us through django-anymail's signal,
# its one integration point; the receiver hands each normalised event to a service.
tracking.connect(
    ByPath("messaging.webhooks.receivers.esp_tracking_received"),
    weak=False,
    dispatch_uid="messaging.esp_tracking_received",
)

# Emails are partitioned by their time; there is no retention policy for them yet, so
# their partitions are made ahead and none is dropped.
register_partitioned_table(
    PartitionedTable(
        table="messaging_email",
        column="created_at",
        retention_days="messaging.services.email_retention.emails_retention_days",
    )
)

# A contact's emails on its timeline in the staff console, and the campaigns waiting for
# review and the last 30 days of email figures on its dashboard.
register_timeline_source("messaging.timeline.email_timeline")
register_dashboard_section("messaging.console.campaigns_awaiting_review")

_EMAIL = {
    "email_id": "0190b7a2-6d2f-7c4b-8a11-4d3e2f1a5b22",
    "contact_id": "0190b7a2-5c1e-7b3a-9f00-3c2d1e0f4a11",
    "template_id": "0190b7a2-7e30-7d5c-9b22-5e4f3a2b6c33",
}
# The system events this family records (`GET /webhook-event-types` lists them).
register_system_event_types(
    SystemEventType(
        name="mail.send",
        description="The mail server accepted an email.",
        example=_EMAIL,
    ),
    SystemEventType(
        name="mail.delivery",
        description="The ESP reported the email delivered to the recipient's server.",
        example=_EMAIL,
    ),
    SystemEventType(
        name="mail.open",
        description="The recipient opened the email (the tracking pixel, a click, or the ESP); "
        "`first` is true for the first open.",
        example={**_EMAIL, "source": "pixel", "first": True},
    ),
    SystemEventType(
        name="mail.click",
        description="The recipient clicked a tracked link; `first` is true for the first click.",
        example={
            **_EMAIL,
            "url": "https://example.com/pricing",
            "source": "redirect",
            "first": True,
        },
    ),
    SystemEventType(
        name="mail.bounce",
        description="The ESP reported a bounce; hard bounces suppress the address.",
        example=_EMAIL,
    ),
    SystemEventType(
        name="mail.complaint",
        description="The recipient marked the email as spam; the address is suppressed.",
        example=_EMAIL,
    ),
    SystemEventType(
        name="mail.unsubscribe",
        description="The recipient unsubscribed through the email's link (from its topic, or "
        "from everything when it has none).",
        example={**_EMAIL, "topic_id": None, "source": "link"},
    ),
)

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
