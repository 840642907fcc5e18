from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools
from config.registries.partitions import PartitionedTable, register_partitioned_table
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


class PushProvidersConfig(AppConfig):
    name = "pushproviders"
    verbose_name = "Push providers"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("pushproviders.api.tools")
