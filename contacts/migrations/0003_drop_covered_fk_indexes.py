"""Drops the single-column index Django made for a contact's project:
contact_project_created_idx leads with the same column and serves every lookup by it, so
each insert maintains one index fewer.

`covered_index_dropped` (config/db/migrationops.py) says how."""

import django.db.models.deletion
from django.db import migrations, models

from config.db.migrationops import covered_index_dropped


class Migration(migrations.Migration):

    dependencies = [
        ("contacts", "0002_contact_project_id_index"),
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        covered_index_dropped(
            model_name="contact",
            name="project",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="contacts", to="tenancy.project"),
            index="contacts_contact_project_id_5b4c4fbe",
            table="contacts_contact",
            column="project_id",
        ),
    ]
