"""Drops the single-column indexes Django made for these foreign keys: an index that
leads with the same column (named on each field) serves every lookup by it, so each
insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock, and on some tables drops a partial unique
constraint on the column along with the index.) On a partitioned table, dropping the parent's index drops
each partition's; partitions made later get only the parent's indexes."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("pushproviders", "0005_push_deliveries_partitioned"),
        ("tenancy", "0006_delivery_policies"),
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
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="pushmessage",
                    name="project",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="push_messages", to="tenancy.project"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "pushproviders_pushmessage_project_id_906ba29c"',
                    reverse_sql='CREATE INDEX "pushproviders_pushmessage_project_id_906ba29c" ON "pushproviders_pushmessage" ("project_id")',
                ),
            ],
        ),
    ]
