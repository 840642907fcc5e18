"""Events: customer submissions and system events. The table is also the work queue."""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from tenancy.models import Project

SYSTEM_PREFIX = "sendrealm."


class EventSource(models.TextChoices):
    CUSTOMER = "customer"
    SYSTEM = "system"


class EventStatus(models.TextChoices):
    ACCEPTED = "accepted"
    PROCESSING = "processing"
    PROCESSED = "processed"
    FAILED = "failed"
    DEAD_LETTERED = "dead_lettered"


class Event(models.Model):
    """One event as received; processing state lives on the row."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="events")
    event = models.CharField(max_length=200)
    source = models.CharField(
        max_length=16, choices=EventSource.choices, default=EventSource.CUSTOMER
    )
    # Identity as submitted; `contact` is what processing resolved it to.
    email = models.CharField(max_length=320, null=True, blank=True)
    external_id = models.CharField(max_length=255, null=True, blank=True)
    contact_ref = models.UUIDField(null=True, blank=True)
    contact = models.ForeignKey(
        "contacts.Contact", on_delete=models.SET_NULL, null=True, blank=True, related_name="events"
    )
    payload = models.JSONField(default=dict, encoder=DjangoJSONEncoder)
    occurred_at = models.DateTimeField()
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    status = models.CharField(
        max_length=16, choices=EventStatus.choices, default=EventStatus.ACCEPTED
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    processed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "idempotency_key"],
                condition=models.Q(idempotency_key__isnull=False),
                name="event_one_per_idempotency_key",
            ),
        ]
        indexes = [
            # Serves the workers' claim: due events waiting for (another) attempt.
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(status__in=["accepted", "failed"]),
                name="event_due_idx",
            ),
            # Serves retention deletes and per-project listings.
            models.Index(fields=["project", "created_at", "id"], name="event_project_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event} ({self.status})"
