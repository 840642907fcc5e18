"""Webhook endpoints and their deliveries; the deliveries table is the work queue."""

from django.contrib.postgres.fields import ArrayField
from django.db import models

from config.db.ids import uuid7
from config.runtime import clock
from config.workqueue.models import WorkItem, dead_letter_index, due_index, lease_index
from tenancy.models import Project, ProjectScopedModel


class WebhookEndpoint(ProjectScopedModel):
    """A URL that receives the project's events of the types it names, signed with its
    secret (and, for a day after a rotation, with the previous one too)."""

    url = models.CharField(max_length=2000)
    # Event names, or ["*"] for every event (system and customer).
    event_types = ArrayField(models.CharField(max_length=200))
    description = models.TextField(null=True, blank=True)
    # `whsec_...`, encrypted at rest (config/runtime/secrets.py); never returned after the
    # answer that made it.
    secret = models.TextField()
    # The secret before the last rotation, also signing until `previous_secret_expires_at`.
    previous_secret = models.TextField(blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.TextField(null=True, blank=True)
    # The first failed attempt since the last successful one (null while healthy): the
    # auto-disable rule reads it, so no scan of the deliveries is needed.
    failing_since = models.DateTimeField(null=True, blank=True)
    # DELETE hides the endpoint at once and stops its deliveries; the row goes once its
    # delivery log has aged out (retention), so a delivery never points at a missing row
    # and a delete never cascades through a large log inside a request.
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # Serves the fan-out: a batch's projects' enabled endpoints.
            models.Index(
                fields=["project"],
                condition=models.Q(disabled_at__isnull=True, deleted_at__isnull=True),
                name="webhook_endpoint_enabled_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.url


class DeliveryState(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class WebhookDelivery(WorkItem):
    """One event for one endpoint: the signed body, sent until a 2xx answer or the retries
    run out. The body is kept as sent, so every attempt (and a replay) carries the same
    `webhook-id` and bytes; it does not point at the event row, so event retention leaves
    the log whole."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="webhook_deliveries"
    )
    # No index of its own: webhook_delivery_log_idx and the unique
    # webhook_delivery_once_per_event lead with it.
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, db_index=False, related_name="deliveries"
    )
    event_id = models.UUIDField()
    event_type = models.CharField(max_length=200)
    webhook_id = models.CharField(max_length=64)
    # The JSON body, serialised once: `{"type", "timestamp", "data"}`.
    body = models.TextField()
    state = models.CharField(
        max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING
    )
    # HTTP attempts made (the kit's `attempts` counts claims since the last replay).
    attempt_count = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    # Why the last attempt failed, short (a response body is never kept beyond this).
    error = models.CharField(max_length=500, null=True, blank=True)
    created_at = models.DateTimeField(default=clock.now, editable=False)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # One delivery per endpoint and event: a reprocessed event makes none twice.
            models.UniqueConstraint(
                fields=["endpoint", "event_id"], name="webhook_delivery_once_per_event"
            ),
        ]
        indexes = [
            # Serve the workers' claim, the takeover of dead workers' rows, and the
            # dead-letter list.
            due_index("webhook_delivery_due_idx"),
            lease_index("webhook_delivery_lease_idx"),
            dead_letter_index("webhook_delivery_dead_idx"),
            # Serves an endpoint's delivery log (cursor order) and the replay of a range.
            models.Index(fields=["endpoint", "created_at", "id"], name="webhook_delivery_log_idx"),
            # Serves the sweep's fix-up of rows the kit dead-lettered on its own (a time
            # limit on the last attempt): nearly always empty.
            models.Index(
                fields=["id"],
                condition=models.Q(status="dead_lettered", state="pending"),
                name="webhook_delivery_unfinish_idx",
            ),
            # Serves the purge of final deliveries past retention, oldest first.
            models.Index(
                fields=["created_at"],
                condition=models.Q(state__in=["delivered", "failed"]),
                name="webhook_delivery_final_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} -> {self.endpoint_id} ({self.state})"
