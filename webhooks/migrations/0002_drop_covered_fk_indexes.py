"""Drops the single-column index Django made for a delivery's endpoint:
webhook_delivery_log_idx and the unique webhook_delivery_once_per_event lead with the same
column and serve every lookup by it, so each insert maintains one index fewer.

`covered_index_dropped` (config/db/migrationops.py) says how."""

import django.db.models.deletion
from django.db import migrations, models

from config.db.migrationops import covered_index_dropped


class Migration(migrations.Migration):

    dependencies = [
        ("webhooks", "0001_initial"),
    ]

    operations = [
        covered_index_dropped(
            model_name="webhookdelivery",
            name="endpoint",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="deliveries", to="webhooks.webhookendpoint"),
            index="webhooks_webhookdelivery_endpoint_id_d5bfb5c8",
            table="webhooks_webhookdelivery",
            column="endpoint_id",
        ),
    ]
