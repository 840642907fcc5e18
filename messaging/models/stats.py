"""Daily delivery figures: per project, day (UTC) and channel, how many messages were
sent, delivered, bounced, complained about, opened and clicked. Each message counts once
per figure, on the day it happened, added by the service that records the change, in its
transaction; the staff console's dashboard reads these rows, never the emails."""

from django.db import models

from messaging.models.templates import Channel
from tenancy.models import Project

# The figures a DeliveryDay counts, in the order charts show them.
DELIVERY_FIGURES = ("sent", "delivered", "bounced", "complained", "opened", "clicked")


class DeliveryDay(models.Model):
    """One project's delivery figures of one channel on one day (UTC)."""

    id = models.BigAutoField(primary_key=True)
    date = models.DateField()
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="delivery_days")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    sent = models.BigIntegerField(default=0)
    delivered = models.BigIntegerField(default=0)
    bounced = models.BigIntegerField(default=0)
    complained = models.BigIntegerField(default=0)
    opened = models.BigIntegerField(default=0)
    clicked = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            # The upsert of every count meets this key; leading with the date, it also
            # serves the dashboard's last 30 days of every project (a range of it).
            models.UniqueConstraint(
                fields=["date", "project", "channel"], name="delivery_day_one_per_key"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} {self.channel} {self.date}"
