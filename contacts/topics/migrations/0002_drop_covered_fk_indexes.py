"""Drops the single-column indexes Django made for these foreign keys: for each, an index
named on its field leads with the same column and serves every lookup by it, so each
insert maintains one index fewer.

`covered_index_dropped` (config/db/migrationops.py) says how."""

import django.db.models.deletion
from django.db import migrations, models

from config.db.migrationops import covered_index_dropped


class Migration(migrations.Migration):

    dependencies = [
        ("tenancy", "0006_delivery_policies"),
        ("topics", "0001_initial"),
    ]

    operations = [
        covered_index_dropped(
            model_name="subscription",
            name="topic",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="subscriptions", to="topics.topic"),
            index="topics_subscription_topic_id_c8ecebcf",
            table="topics_subscription",
            column="topic_id",
        ),
        covered_index_dropped(
            model_name="topic",
            name="project",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="topics", to="tenancy.project"),
            index="topics_topic_project_id_0a127407",
            table="topics_topic",
            column="project_id",
        ),
    ]
