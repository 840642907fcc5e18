"""Drops the single-column indexes Django made for an event's and an event type's project:
event_project_created_idx and event_type_project_created_idx lead with the same column and
serve every lookup by it, so each insert maintains one index fewer.

Only the index goes: the state changes to `db_index=False`, and the database runs a plain
DROP INDEX. (Django's own AlterField would also drop and re-add the foreign key, which
checks every row again under a lock.) Dropping the partitioned table's index drops each
partition's; partitions made later get only the parent's indexes."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("events", "0005_event_ids_time_ordered"),
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="event",
                    name="project",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="events", to="tenancy.project"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "events_event_project_id_b9c378d4"',
                    reverse_sql='CREATE INDEX "events_event_project_id_b9c378d4" ON "events_event" ("project_id")',
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="eventtype",
                    name="project",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="event_types", to="tenancy.project"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "events_eventtype_project_id_b8a0ccf9"',
                    reverse_sql='CREATE INDEX "events_eventtype_project_id_b8a0ccf9" ON "events_eventtype" ("project_id")',
                ),
            ],
        ),
    ]
