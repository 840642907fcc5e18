"""Push deliveries partitioned by their message's time (`message_created_at`, copied from
the message), so a message's deliveries live in one partition. The unique key per
installation gains that column (PostgreSQL requires the partition key in each): a message
has one time, so it is as unique as before.

The conversion copies the table under its lock (config/db/partitioning.py): a large table
needs a window for it. Reversible: going back copies every partition's rows into a plain
table again."""

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from config.db.partitioning import table_partition, table_unpartition

_FILL = (
    "UPDATE pushproviders_pushdelivery d SET message_created_at = m.created_at "
    "FROM pushproviders_pushmessage m WHERE m.id = d.message_id"
)


def partition(apps: StateApps, editor: BaseDatabaseSchemaEditor) -> None:
    table_partition(editor, table="pushproviders_pushdelivery", column="message_created_at")


def unpartition(apps: StateApps, editor: BaseDatabaseSchemaEditor) -> None:
    table_unpartition(editor, table="pushproviders_pushdelivery")


class Migration(migrations.Migration):
    dependencies = [("pushproviders", "0004_index_dead_letters")]

    operations = [
        migrations.AddField(
            model_name="pushdelivery",
            name="message_created_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunSQL(_FILL, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="pushdelivery",
            name="message_created_at",
            field=models.DateTimeField(),
        ),
        migrations.RemoveConstraint(
            model_name="pushdelivery", name="push_delivery_one_per_installation"
        ),
        migrations.RunPython(partition, unpartition),
        migrations.AddConstraint(
            model_name="pushdelivery",
            constraint=models.UniqueConstraint(
                fields=("message", "installation", "message_created_at"),
                name="push_delivery_one_per_installation",
            ),
        ),
    ]
