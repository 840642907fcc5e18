from django.apps import AppConfig

from config.registries.systemevents import SystemEventType, register_system_event_types
from events.hooks import register_event_batch_handler

# Every processed event passes here: the batch's deliveries are made in its transaction.
register_event_batch_handler("webhooks.services.fanout.WebhooksEventBatch")

# The system event this family records (`GET /webhook-event-types` lists them).
register_system_event_types(
    SystemEventType(
        name="webhook.disabled",
        description="A webhook endpoint was disabled because every delivery to it failed for "
        "WEBHOOK_DISABLE_AFTER_HOURS (72 by default).",
        example={
            "endpoint_id": "0190b7a2-a163-7a8f-8e55-8b7c6d5e9f66",
            "url": "https://example.com/webhooks",
            "reason": "Every delivery failed for 72 hours.",
            "failing_since": "2026-01-01T12:00:00Z",
            "disabled_at": "2026-01-04T12:00:05Z",
        },
    ),
)


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"
