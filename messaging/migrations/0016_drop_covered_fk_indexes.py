"""Drops the single-column indexes Django made for these foreign keys: for each, an index
named on its field leads with the same column and serves every lookup by it, so each
insert maintains one index fewer.

`covered_index_dropped` (config/db/migrationops.py) says how. Django's own AlterField would
also drop a template version's partial unique constraints on the same column (one draft,
one published) as if they were the index."""

import django.db.models.deletion
from django.db import migrations, models

from config.db.migrationops import covered_index_dropped


class Migration(migrations.Migration):

    dependencies = [
        ("messaging", "0015_emails_partitioned"),
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        covered_index_dropped(
            model_name="campaignfanout",
            name="campaign",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="fanouts", to="messaging.campaign"),
            index="messaging_campaignfanout_campaign_id_2143abf9",
            table="messaging_campaignfanout",
            column="campaign_id",
        ),
        covered_index_dropped(
            model_name="suppression",
            name="project",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="suppressions", to="tenancy.project"),
            index="messaging_suppression_project_id_c3b8be77",
            table="messaging_suppression",
            column="project_id",
        ),
        covered_index_dropped(
            model_name="templateversion",
            name="template",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="versions", to="messaging.messagetemplate"),
            index="messaging_templateversion_template_id_6d83a9df",
            table="messaging_templateversion",
            column="template_id",
        ),
    ]
