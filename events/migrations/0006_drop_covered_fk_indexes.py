"""Drops the single-column indexes Django made for an event's and an event type's project:
event_project_created_idx and event_type_project_created_idx lead with the same column and
serve every lookup by it, so each insert maintains one index fewer.

`covered_index_dropped` (config/db/migrationops.py) says how."""

import django.db.models.deletion
from django.db import migrations, models

from config.db.migrationops import covered_index_dropped


class Migration(migrations.Migration):

    dependencies = [
        ("events", "0005_event_ids_time_ordered"),
        ("tenancy", "0006_delivery_policies"),
    ]

    operations = [
        covered_index_dropped(
            model_name="event",
            name="project",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="events", to="tenancy.project"),
            index="events_event_project_id_b9c378d4",
            table="events_event",
            column="project_id",
        ),
        covered_index_dropped(
            model_name="eventtype",
            name="project",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="event_types", to="tenancy.project"),
            index="events_eventtype_project_id_b8a0ccf9",
            table="events_eventtype",
            column="project_id",
        ),
    ]
