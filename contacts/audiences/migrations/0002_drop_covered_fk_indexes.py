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
        ("audiences", "0001_initial"),
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="audience",
                    name="project",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="audiences", to="tenancy.project"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "audiences_audience_project_id_06b3ff40"',
                    reverse_sql='CREATE INDEX "audiences_audience_project_id_06b3ff40" ON "audiences_audience" ("project_id")',
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="audiencemembership",
                    name="audience",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="memberships", to="audiences.audience"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "audiences_audiencemembership_audience_id_43c9e7d6"',
                    reverse_sql='CREATE INDEX "audiences_audiencemembership_audience_id_43c9e7d6" ON "audiences_audiencemembership" ("audience_id")',
                ),
            ],
        ),
    ]
