from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.partitions import PartitionedTable, register_partitioned_table
from config.registries.systemevents import SystemEventType, register_system_event_types
from contacts.hooks import register_contact_deleted_handler, register_timeline_source
from messaging.hooks import register_push_campaign_handlers, register_push_test_sender

# A deleted contact's devices stop belonging to anyone the project knows.
register_contact_deleted_handler(
    "pushproviders.services.installations.installations_of_deleted_contact"
)
# Test sends of push templates (`POST /templates/{id}/test`) go through push sending.
register_push_test_sender("pushproviders.services.testsends.push_template_test_send")
# Push campaigns resolve their app, send their fan-out batches and read their progress here.
register_push_campaign_handlers(
    app_resolver="pushproviders.services.campaigns.push_campaign_app_resolve",
    sender="pushproviders.services.campaigns.push_campaign_batch_send",
    progress="pushproviders.services.campaigns.push_campaign_progress_read",
)

# Push deliveries are partitioned by their message's time; there is no retention policy
# for them yet, so their partitions are made ahead and none is dropped.
register_partitioned_table(
    PartitionedTable(
        table="pushproviders_pushdelivery",
        column="message_created_at",
        retention_days="pushproviders.services.retention.push_deliveries_retention_days",
    )
)

# A contact's push notifications on its timeline in the staff console.
register_timeline_source("pushproviders.timeline.push_timeline")

_PUSH = {
    "push_id": "0190b7a2-8f41-7e6d-8c33-6f5a4b3c7d44",
    "contact_id": "0190b7a2-5c1e-7b3a-9f00-3c2d1e0f4a11",
    "template_id": "0190b7a2-7e30-7d5c-9b22-5e4f3a2b6c33",
    "installation_id": "0190b7a2-9052-7f7e-9d44-7a6b5c4d8e55",
    "platform": "fcm",
}
# The system events this family records (`GET /webhook-event-types` lists them).
register_system_event_types(
    SystemEventType(
        name="push.send",
        description="A push provider accepted a notification for one installation.",
        example=_PUSH,
    ),
    SystemEventType(
        name="push.open",
        description="The app reported a notification opened.",
        example=_PUSH,
    ),
    SystemEventType(
        name="push.failure",
        description="A notification could not be sent to an installation; `status` is "
        "`failed` or `invalid_token` (the installation was deactivated).",
        example={**_PUSH, "status": "failed", "error": "The provider is disabled."},
    ),
)


class PushProvidersConfig(AppConfig):
    name = "pushproviders"
    verbose_name = "Push providers"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("pushproviders.api.tools")
