"""The suppression list: addresses a project never mails."""

import uuid

from django.db import models

from config.runtime import clock
from tenancy.models import Project


class SuppressionReason(models.TextChoices):
    BOUNCE = "bounce"
    COMPLAINT = "complaint"
    UNSUBSCRIBE = "unsubscribe"
    MANUAL = "manual"


class Suppression(models.Model):
    """An address of a project, in the project's normal form, that no message goes to."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: suppression_created_idx and the unique
    # suppression_one_per_email lead with it.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, db_index=False, related_name="suppressions"
    )
    email = models.CharField(max_length=320)
    reason = models.CharField(max_length=16, choices=SuppressionReason.choices)
    created_at = models.DateTimeField(default=clock.now)

    class Meta:
        constraints = [
            # One entry per address: concurrent adds race against this index, and sends
            # look recipients up through it (`suppressed_among`).
            models.UniqueConstraint(fields=["project", "email"], name="suppression_one_per_email"),
        ]
        indexes = [
            # Serves the cursor listing of a project's suppressions.
            models.Index(fields=["project", "created_at", "id"], name="suppression_created_idx"),
        ]

    def __str__(self) -> str:
        return self.email
