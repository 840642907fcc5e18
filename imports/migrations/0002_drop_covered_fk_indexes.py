"""Drops the single-column indexes Django made for these foreign keys: for each, an index
named on its field leads with the same column and serves every lookup by it, so each
insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock.)"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("imports", "0001_imports_rows_chunks"),
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="import",
                    name="project",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="imports", to="tenancy.project"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "imports_import_project_id_d07f9d6e"',
                    reverse_sql='CREATE INDEX "imports_import_project_id_d07f9d6e" ON "imports_import" ("project_id")',
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="importchunk",
                    name="import_record",
                    field=models.ForeignKey(db_column="import_id", db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="chunks", to="imports.import"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "imports_importchunk_import_id_6f565be0"',
                    reverse_sql='CREATE INDEX "imports_importchunk_import_id_6f565be0" ON "imports_importchunk" ("import_id")',
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="importrow",
                    name="import_record",
                    field=models.ForeignKey(db_column="import_id", db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="rows", to="imports.import"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "imports_importrow_import_id_815d38c1"',
                    reverse_sql='CREATE INDEX "imports_importrow_import_id_815d38c1" ON "imports_importrow" ("import_id")',
                ),
            ],
        ),
    ]
