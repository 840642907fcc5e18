"""Prepared actions: the expiring first half of prepare -> execute."""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from tenancy.models import Project


class PreparedActionStatus(models.TextChoices):
    PENDING = "pending"
    EXECUTED = "executed"
    EXPIRED = "expired"


class PreparedAction(models.Model):
    """An operation on one resource, described with its effects, waiting to be executed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="prepared_actions")
    operation = models.CharField(max_length=64)
    resource_id = models.CharField(max_length=64)
    api_key_id = models.UUIDField()
    user_id = models.IntegerField(null=True, blank=True)
    effects = models.JSONField(default=dict, encoder=DjangoJSONEncoder)
    status = models.CharField(
        max_length=16, choices=PreparedActionStatus.choices, default=PreparedActionStatus.PENDING
    )
    expires_at = models.DateTimeField()
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    result_status = models.PositiveSmallIntegerField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    executed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # Serves the expiry sweep: pending actions ordered by deadline.
            models.Index(
                fields=["expires_at"],
                condition=models.Q(status="pending"),
                name="prepared_pending_expiry_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.operation} {self.resource_id} ({self.status})"
