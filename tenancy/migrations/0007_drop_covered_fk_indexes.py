"""Drops the single-column indexes Django made for these foreign keys: an index that
leads with the same column (named on each field) serves every lookup by it, so each
insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock, and on some tables drops a partial unique
constraint on the column along with the index.)"""

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
