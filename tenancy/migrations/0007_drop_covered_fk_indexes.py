"""Drops the single-column index Django made for a usage day's project: the unique
usage_day_one_per_date leads with the same column and serves every lookup by it, so each
insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock.)"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="usageday",
                    name="project",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="usage_days", to="tenancy.project"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "tenancy_usageday_project_id_38a7d4e3"',
                    reverse_sql='CREATE INDEX "tenancy_usageday_project_id_38a7d4e3" ON "tenancy_usageday" ("project_id")',
                ),
            ],
        ),
    ]
