"""Drops the single-column indexes Django made for these foreign keys: for each, an index
named on its field leads with the same column and serves every lookup by it, so each
insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock, and drop a template version's partial unique constraints
on the same column, one draft and one published, as if they were the index.)"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("messaging", "0015_emails_partitioned"),
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="campaignfanout",
                    name="campaign",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="fanouts", to="messaging.campaign"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "messaging_campaignfanout_campaign_id_2143abf9"',
                    reverse_sql='CREATE INDEX "messaging_campaignfanout_campaign_id_2143abf9" ON "messaging_campaignfanout" ("campaign_id")',
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="suppression",
                    name="project",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="suppressions", to="tenancy.project"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "messaging_suppression_project_id_c3b8be77"',
                    reverse_sql='CREATE INDEX "messaging_suppression_project_id_c3b8be77" ON "messaging_suppression" ("project_id")',
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="templateversion",
                    name="template",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="versions", to="messaging.messagetemplate"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "messaging_templateversion_template_id_6d83a9df"',
                    reverse_sql='CREATE INDEX "messaging_templateversion_template_id_6d83a9df" ON "messaging_templateversion" ("template_id")',
                ),
            ],
        ),
    ]
