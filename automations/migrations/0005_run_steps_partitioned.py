"""Run steps partitioned by their run's start (`run_created_at`, copied from the run), so a
run's whole timeline lives in one partition. The unique keys gain that column (PostgreSQL
requires the partition key in each): a run has one start, so they are as unique as before.

The conversion copies the table under its lock (config/db/partitioning.py): a large table
needs a window for it. Each partition keeps the table's fillfactor of 70 (migration 0003).
Reversible: going back copies every partition's rows into a plain table again."""

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from config.db.partitioning import table_partition, table_unpartition

_STORAGE = "fillfactor = 70"
_FILL = (
    "UPDATE automations_runstep s SET run_created_at = r.created_at "
    "FROM automations_automationrun r WHERE r.id = s.run_id"
)


def partition(apps: StateApps, editor: BaseDatabaseSchemaEditor) -> None:
    table_partition(
        editor, table="automations_runstep", column="run_created_at", storage=_STORAGE
    )


def unpartition(apps: StateApps, editor: BaseDatabaseSchemaEditor) -> None:
    table_unpartition(editor, table="automations_runstep", storage=_STORAGE)


class Migration(migrations.Migration):
    dependencies = [("automations", "0004_trigger_stamp")]

    operations = [
        migrations.AddField(
            model_name="runstep",
            name="run_created_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunSQL(_FILL, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="runstep",
            name="run_created_at",
            field=models.DateTimeField(),
        ),
        migrations.RemoveConstraint(model_name="runstep", name="run_step_once_per_visit"),
        migrations.RemoveConstraint(model_name="runstep", name="run_step_one_per_email"),
        migrations.RunPython(partition, unpartition),
        migrations.AddConstraint(
            model_name="runstep",
            constraint=models.UniqueConstraint(
                fields=("run", "step_key", "visit", "run_created_at"),
                name="run_step_once_per_visit",
            ),
        ),
        migrations.AddConstraint(
            model_name="runstep",
            constraint=models.UniqueConstraint(
                condition=models.Q(("email__isnull", False)),
                fields=("email", "run_created_at"),
                name="run_step_one_per_email",
            ),
        ),
        migrations.AddIndex(
            model_name="automationrun",
            index=models.Index(fields=["created_at"], name="run_started_period_idx"),
        ),
    ]
