"""What frequency caps count: per contact, the recent messages of each channel."""

from django.contrib.postgres.fields import ArrayField
from django.db import models

from contacts.models import Contact


class ContactSends(models.Model):
    """A contact's recent messages that count against the project's frequency caps, by
    channel: their send times, oldest first, kept while a cap can still count them
    (messaging/services/policy.py). The row is also the contact's cap lock: a send locks
    it (an upsert, so a first send makes it), reads it, and writes its own time into it
    before its transaction commits, so the next send to the contact reads it."""

    contact = models.OneToOneField(
        Contact, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    email = ArrayField(models.DateTimeField(), default=list, blank=True)
    push = ArrayField(models.DateTimeField(), default=list, blank=True)

    class Meta:
        verbose_name_plural = "contact sends"

    def __str__(self) -> str:
        return f"sends to {self.contact_id}"
