"""A step's email without a database foreign key: the emails table becomes partitioned by
time (messaging 0014), and a foreign key to it would have to name its whole primary key
(id, created_at). Django's `on_delete` (SET_NULL) still clears the step's email when the
email goes; the column's index serves it. Runs before that conversion, which refuses a
table other tables' keys point at."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("automations", "0007_run_step_deferred"),
        ("messaging", "0014_campaign_email_recipients"),
    ]
    run_before = [("messaging", "0015_emails_partitioned")]

    operations = [
        migrations.AlterField(
            model_name="runstep",
            name="email",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="automation_steps",
                to="messaging.email",
            ),
        ),
    ]
