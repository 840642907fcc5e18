"""What frequency caps count: one row per message counted against a contact's caps."""

from django.db import models

from contacts.models import Contact
from messaging.models.templates import Channel
from tenancy.models import Project


class CappedSend(models.Model):
    """A message to a contact that counts against the project's frequency caps of its
    channel (messaging/services/policy.py): written with the message, in its transaction,
    under the contact's cap lock, so the count a send reads is exact."""

    id = models.BigAutoField(primary_key=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="+", db_index=False)
    channel = models.CharField(max_length=8, choices=Channel.choices)
    # When the message goes: now, or the end of the quiet hours that deferred it.
    sent_at = models.DateTimeField()

    class Meta:
        indexes = [
            # Serves the cap check of each send: a contact's messages of a channel within
            # the longest cap window (an index range read), and the purge by project.
            models.Index(fields=["contact", "channel", "sent_at"], name="capped_send_count_idx"),
            models.Index(fields=["project", "sent_at"], name="capped_send_purge_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.channel} to {self.contact_id} at {self.sent_at}"
