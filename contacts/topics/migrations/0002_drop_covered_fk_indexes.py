"""Drops the single-column indexes Django made for these foreign keys: for each, an index
named on its field leads with the same column and serves every lookup by it, so each
insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock.)"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("tenancy", "0006_delivery_policies"),
        ("topics", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="subscription",
                    name="topic",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="subscriptions", to="topics.topic"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "topics_subscription_topic_id_c8ecebcf"',
                    reverse_sql='CREATE INDEX "topics_subscription_topic_id_c8ecebcf" ON "topics_subscription" ("topic_id")',
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="topic",
                    name="project",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="topics", to="tenancy.project"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "topics_topic_project_id_0a127407"',
                    reverse_sql='CREATE INDEX "topics_topic_project_id_0a127407" ON "topics_topic" ("project_id")',
                ),
            ],
        ),
    ]
