"""The events table partitioned by acceptance time (`created_at`), and idempotency keys
kept unique across its partitions by a table of their own (`EventKey`).

The conversion copies the table under its lock (config/db/partitioning.py): a large table
needs a window for it. It is reversible: going back copies every partition's rows into a
plain table again, with its unique index of (project, idempotency_key)."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from config.db.partitioning import table_partition, table_unpartition

_KEYS_FILL = (
    "INSERT INTO events_eventkey (event_id, project_id, idempotency_key, created_at) "
    "SELECT id, project_id, idempotency_key, created_at FROM events_event "
    "WHERE idempotency_key IS NOT NULL"
)


def keys_fill(apps: StateApps, editor: BaseDatabaseSchemaEditor) -> None:
    editor.execute(_KEYS_FILL)


def partition(apps: StateApps, editor: BaseDatabaseSchemaEditor) -> None:
    table_partition(editor, table="events_event", column="created_at")


def unpartition(apps: StateApps, editor: BaseDatabaseSchemaEditor) -> None:
    table_unpartition(editor, table="events_event")


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0003_unprocessed_index"),
        ("tenancy", "0005_plans_and_usage"),
    ]

    operations = [
        migrations.CreateModel(
            name="EventKey",
            fields=[
                (
                    "event",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="events.event",
                    ),
                ),
                ("idempotency_key", models.CharField(max_length=255)),
                ("created_at", models.DateTimeField()),
                (
                    "project",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="tenancy.project",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["created_at"], name="event_key_created_idx")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "idempotency_key"), name="event_key_one_per_project"
                    )
                ],
            },
        ),
        migrations.RunPython(keys_fill, migrations.RunPython.noop),
        migrations.RemoveConstraint(model_name="event", name="event_one_per_idempotency_key"),
        migrations.RunPython(partition, unpartition),
    ]
