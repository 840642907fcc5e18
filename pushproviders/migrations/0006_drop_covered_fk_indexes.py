"""Drops the single-column index Django made for a delivery's message: the unique
(message, installation, message_created_at) leads with the same column and serves every
lookup by it, so each insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock.) Dropping the partitioned table's index drops each
partition's; partitions made later get only the parent's indexes."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("pushproviders", "0005_push_deliveries_partitioned"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="pushdelivery",
                    name="message",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="deliveries", to="pushproviders.pushmessage"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "pushproviders_pushdelivery_message_id_14415638"',
                    reverse_sql='CREATE INDEX "pushproviders_pushdelivery_message_id_14415638" ON "pushproviders_pushdelivery" ("message_id")',
                ),
            ],
        ),
    ]
