"""Idempotency keys of emails held unique per project by a table of their own
(`EmailKey`), as the events' are, so the emails table can be partitioned by time (an
index there would be unique per month only). Every email's key is copied in; going back
keeps the key of the emails that hold one and clears the others (an expired key's earlier
email), so the unique index can be made again."""

import django.db.models.deletion
from django.db import migrations, models

_FILL = (
    "INSERT INTO messaging_emailkey (email_id, project_id, idempotency_key, created_at) "
    "SELECT id, project_id, idempotency_key, created_at FROM messaging_email "
    "WHERE idempotency_key IS NOT NULL"
)
_CLEAR = (
    "UPDATE messaging_email SET idempotency_key = NULL WHERE idempotency_key IS NOT NULL "
    "AND id NOT IN (SELECT email_id FROM messaging_emailkey)"
)


class Migration(migrations.Migration):
    dependencies = [
        ("messaging", "0012_delivery_policy"),
        ("tenancy", "0005_plans_and_usage"),
    ]

    operations = [
        migrations.CreateModel(
            name="EmailKey",
            fields=[
                (
                    "email",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="messaging.email",
                    ),
                ),
                ("idempotency_key", models.CharField(max_length=255)),
                ("created_at", models.DateTimeField()),
            ],
        ),
        migrations.RemoveConstraint(
            model_name="email",
            name="email_idempotency_key_unique",
        ),
        migrations.AddField(
            model_name="emailkey",
            name="project",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="tenancy.project",
            ),
        ),
        migrations.AddConstraint(
            model_name="emailkey",
            constraint=models.UniqueConstraint(
                fields=("project", "idempotency_key"), name="email_key_one_per_project"
            ),
        ),
        migrations.RunSQL(_FILL, _CLEAR),
    ]
