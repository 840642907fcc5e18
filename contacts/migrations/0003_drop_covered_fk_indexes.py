"""Drops the single-column index Django made for a contact's project:
contact_project_created_idx leads with the same column and serves every lookup by it, so
each insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock.)"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("contacts", "0002_contact_project_id_index"),
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="contact",
                    name="project",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="contacts", to="tenancy.project"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "contacts_contact_project_id_5b4c4fbe"',
                    reverse_sql='CREATE INDEX "contacts_contact_project_id_5b4c4fbe" ON "contacts_contact" ("project_id")',
                ),
            ],
        ),
    ]
