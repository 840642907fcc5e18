"""Drops the single-column index Django made for a version's automation:
autversion_list_idx and the unique automation_version_number_unique lead with the same
column and serve every lookup by it, so each insert maintains one index fewer.

`covered_index_dropped` (config/db/migrationops.py) says how. Django's own AlterField would
also drop the version's partial unique constraints on the same column (one draft,
one published) as if they were the index."""

import django.db.models.deletion
from django.db import migrations, models

from config.db.migrationops import covered_index_dropped


class Migration(migrations.Migration):

    dependencies = [
        ("automations", "0011_test_run_holdout"),
    ]

    operations = [
        covered_index_dropped(
            model_name="automationversion",
            name="automation",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="versions", to="automations.automation"),
            index="automations_automationversion_automation_id_1d5ce1b5",
            table="automations_automationversion",
            column="automation_id",
        ),
    ]
