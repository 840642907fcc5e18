"""Drops the single-column indexes Django made for these foreign keys: for each, an index
named on its field leads with the same column and serves every lookup by it, so each
insert maintains one index fewer.

`covered_index_dropped` (config/db/migrationops.py) says how."""

import django.db.models.deletion
from django.db import migrations, models

from config.db.migrationops import covered_index_dropped


class Migration(migrations.Migration):

    dependencies = [
        ("audiences", "0001_initial"),
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        covered_index_dropped(
            model_name="audience",
            name="project",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="audiences", to="tenancy.project"),
            index="audiences_audience_project_id_06b3ff40",
            table="audiences_audience",
            column="project_id",
        ),
        covered_index_dropped(
            model_name="audiencemembership",
            name="audience",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="memberships", to="audiences.audience"),
            index="audiences_audiencemembership_audience_id_43c9e7d6",
            table="audiences_audiencemembership",
            column="audience_id",
        ),
    ]
