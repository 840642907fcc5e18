"""Drops the single-column index Django made for a usage day's project: the unique
usage_day_one_per_date leads with the same column and serves every lookup by it, so each
insert maintains one index fewer.

`covered_index_dropped` (config/db/migrationops.py) says how."""

import django.db.models.deletion
from django.db import migrations, models

from config.db.migrationops import covered_index_dropped


class Migration(migrations.Migration):

    dependencies = [
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        covered_index_dropped(
            model_name="usageday",
            name="project",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="usage_days", to="tenancy.project"),
            index="tenancy_usageday_project_id_38a7d4e3",
            table="tenancy_usageday",
            column="project_id",
        ),
    ]
