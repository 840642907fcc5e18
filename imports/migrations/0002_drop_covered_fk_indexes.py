"""Drops the single-column indexes Django made for these foreign keys: for each, an index
named on its field leads with the same column and serves every lookup by it, so each
insert maintains one index fewer.

`covered_index_dropped` (config/db/migrationops.py) says how."""

import django.db.models.deletion
from django.db import migrations, models

from config.db.migrationops import covered_index_dropped


class Migration(migrations.Migration):

    dependencies = [
        ("imports", "0001_imports_rows_chunks"),
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        covered_index_dropped(
            model_name="import",
            name="project",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="imports", to="tenancy.project"),
            index="imports_import_project_id_d07f9d6e",
            table="imports_import",
            column="project_id",
        ),
        covered_index_dropped(
            model_name="importchunk",
            name="import_record",
            field=models.ForeignKey(db_column="import_id", db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="chunks", to="imports.import"),
            index="imports_importchunk_import_id_6f565be0",
            table="imports_importchunk",
            column="import_id",
        ),
        covered_index_dropped(
            model_name="importrow",
            name="import_record",
            field=models.ForeignKey(db_column="import_id", db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="rows", to="imports.import"),
            index="imports_importrow_import_id_815d38c1",
            table="imports_importrow",
            column="import_id",
        ),
    ]
