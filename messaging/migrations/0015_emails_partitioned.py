"""Emails partitioned by `created_at`, a partition per month (the partition kit makes them
ahead; no email retention, so none is dropped). Its unique keys went first (0012, 0013),
and so do the database foreign keys other tables held to it (deliveries, captures, and
automation steps in automations 0007): a key to a partitioned table would have to name
its whole primary key, which becomes (id, created_at). New ids are version 7 and carry
the millisecond of `created_at`.

The triggers that check an email's references once per statement (0009) go with the
table the conversion drops: they are made again on the partitioned table (PostgreSQL
runs a statement trigger with a transition table on a partitioned table for the rows of
every partition, and clones a row trigger to each partition, those made later too), and
again on the plain table when going back. The triggers on the referenced tables name the
emails table and stay.

The conversion copies the table under its lock (config/db/partitioning.py): a large table
needs a window for it. Reversible: going back copies every partition's rows into a plain
table again."""

import django.db.models.deletion
from django.db import migrations, models

import messaging.models.emails
from config.db.partitioning import table_partition, table_unpartition

_TABLE = "messaging_email"
# As messaging 0009 made them (`REFERENCES_CHECKED`); the functions stay.
_CHECKED = ("project_id", "template_id", "template_version_id", "topic_id", "campaign_id")
_CHANGED = " OR ".join(
    f"(NEW.{column} IS NOT NULL AND NEW.{column} IS DISTINCT FROM OLD.{column})"
    for column in _CHECKED
)
_TRIGGERS = f"""
CREATE TRIGGER messaging_email_references_inserted AFTER INSERT ON {_TABLE}
  REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION messaging_email_references_inserted();
CREATE TRIGGER messaging_email_references_updated AFTER UPDATE OF {", ".join(_CHECKED)}
  ON {_TABLE} FOR EACH ROW WHEN ({_CHANGED})
  EXECUTE FUNCTION messaging_email_references_updated();
"""


def partition(apps, schema_editor):
    table_partition(schema_editor, table=_TABLE, column="created_at")
    schema_editor.execute(_TRIGGERS)


def unpartition(apps, schema_editor):
    table_unpartition(schema_editor, table=_TABLE)
    schema_editor.execute(_TRIGGERS)


class Migration(migrations.Migration):
    dependencies = [("messaging", "0014_campaign_email_recipients")]

    operations = [
        migrations.AlterField(
            model_name="email",
            name="id",
            field=models.UUIDField(
                default=messaging.models.emails.email_id_new,
                editable=False,
                primary_key=True,
                serialize=False,
            ),
        ),
        migrations.AlterField(
            model_name="emaildelivery",
            name="email",
            field=models.OneToOneField(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                primary_key=True,
                related_name="delivery",
                serialize=False,
                to="messaging.email",
            ),
        ),
        migrations.AlterField(
            model_name="capturedmessage",
            name="email",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="captures",
                to="messaging.email",
            ),
        ),
        migrations.RunPython(partition, unpartition),
    ]
