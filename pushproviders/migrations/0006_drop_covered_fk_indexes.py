"""Drops the single-column index Django made for a delivery's message: the unique
(message, installation, message_created_at) leads with the same column and serves every
lookup by it, so each insert maintains one index fewer.

`covered_index_dropped` (config/db/migrationops.py) says how."""

import django.db.models.deletion
from django.db import migrations, models

from config.db.migrationops import covered_index_dropped


class Migration(migrations.Migration):

    dependencies = [
        ("pushproviders", "0005_push_deliveries_partitioned"),
    ]

    operations = [
        covered_index_dropped(
            model_name="pushdelivery",
            name="message",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="deliveries", to="pushproviders.pushmessage"),
            index="pushproviders_pushdelivery_message_id_14415638",
            table="pushproviders_pushdelivery",
            column="message_id",
        ),
    ]
