"""Drops the single-column index Django made for a delivery's endpoint:
webhook_delivery_log_idx and the unique webhook_delivery_once_per_event lead with the same
column and serve every lookup by it, so each insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock.)"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("webhooks", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="webhookdelivery",
                    name="endpoint",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="deliveries", to="webhooks.webhookendpoint"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "webhooks_webhookdelivery_endpoint_id_d5bfb5c8"',
                    reverse_sql='CREATE INDEX "webhooks_webhookdelivery_endpoint_id_d5bfb5c8" ON "webhooks_webhookdelivery" ("endpoint_id")',
                ),
            ],
        ),
    ]
