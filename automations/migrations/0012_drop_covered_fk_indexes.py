"""Drops the single-column index Django made for a version's automation:
autversion_list_idx and the unique automation_version_number_unique lead with the same
column and serve every lookup by it, so each insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock, and drop the version's partial unique constraints
on the same column, one draft and one published, as if they were the index.)"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("automations", "0011_test_run_holdout"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="automationversion",
                    name="automation",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="versions", to="automations.automation"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "automations_automationversion_automation_id_1d5ce1b5"',
                    reverse_sql='CREATE INDEX "automations_automationversion_automation_id_1d5ce1b5" ON "automations_automationversion" ("automation_id")',
                ),
            ],
        ),
    ]
