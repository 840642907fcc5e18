"""The tool-call audit partitioned by the time of the call (config/db/partitions.py): its
rows are copied into partitions covering them, under the table's lock. Reversible."""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from config.db.partitioning import table_partition, table_unpartition


def partition(apps: StateApps, editor: BaseDatabaseSchemaEditor) -> None:
    table_partition(editor, table="agent_toolcall", column="created_at")


def unpartition(apps: StateApps, editor: BaseDatabaseSchemaEditor) -> None:
    table_unpartition(editor, table="agent_toolcall")


class Migration(migrations.Migration):
    dependencies = [("agent", "0001_tool_call_audit")]

    operations = [migrations.RunPython(partition, unpartition)]
