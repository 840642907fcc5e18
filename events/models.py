"""Events: customer submissions and system events. The table is also the work queue."""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from config.db.ids import uuid7
from config.runtime import clock
from config.workqueue.models import WorkItem, due_index, lease_index
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


# Accepted and not processed yet: waiting for its first attempt, being worked (or held by
# a worker that died, until its lease runs out), or failed and due again. A dead-lettered
# event is processed only if staff requeue it.
UNPROCESSED_STATUSES = (
    EventStatus.ACCEPTED.value,
    EventStatus.PROCESSING.value,
    EventStatus.FAILED.value,
)


class Event(WorkItem):
    """One event as received; processing state lives on the row (the table is the outbox
    and the workers' queue: status, attempts, claim and lease columns come from the
    work-queue kit)."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # No index of its own: event_project_created_idx leads with it and serves every
    # lookup by project (the project's deletion included).
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, db_index=False, related_name="events"
    )
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
    # The kit's states under the names the API shows (CONTRACT section 5).
    status = models.CharField(
        max_length=16, choices=EventStatus.choices, default=EventStatus.ACCEPTED
    )
    processed_at = models.DateTimeField(null=True, blank=True)
    # Set when the event was counted into the catalog (once, per processed batch).
    cataloged_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=clock.now, editable=False)

    class Meta:
        # The table is partitioned by `created_at` (config/db/partitions.py, made in
        # migration 0004): its primary key in the database is (id, created_at), as
        # PostgreSQL requires of a partitioned table; `id` alone, a random UUID, is the key
        # Django knows. For that reason too, an idempotency key's uniqueness is kept by
        # EventKey, not by a unique index here.
        indexes = [
            # Serve the workers' claim: due events, and expired leases of dead workers.
            due_index("event_due_idx"),
            lease_index("event_lease_idx"),
            # Serves the sweep that catalogs processed events a dead worker left uncounted.
            models.Index(
                fields=["processed_at"],
                condition=models.Q(status="processed", cataloged_at__isnull=True),
                name="event_uncataloged_idx",
            ),
            # Serves the dead-letter admin list.
            models.Index(
                fields=["created_at"],
                condition=models.Q(status="dead_lettered"),
                name="event_dead_letter_idx",
            ),
            # Serves retention deletes and per-project listings.
            models.Index(fields=["project", "created_at", "id"], name="event_project_created_idx"),
            # Serves the events of a project and name not processed yet, by acceptance
            # time (`events_in_windows`): a wait for that name is not timed out while an
            # event accepted before its deadline may still match it.
            models.Index(
                fields=["project", "event", "created_at"],
                condition=models.Q(status__in=list(UNPROCESSED_STATUSES)),
                name="event_unprocessed_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} ({self.status})"


class EventKey(models.Model):
    """An idempotency key used in a project, and the event it made: one per project and key
    across every partition of the events table (a unique index there would have to hold the
    partition key, so would be unique per month only). Written by the same statement as its
    event; deleted with it by retention, row-wise and with the event's partition."""

    event = models.OneToOneField(
        Event,
        on_delete=models.CASCADE,
        primary_key=True,
        # A foreign key to a partitioned table must name its whole primary key
        # (id, created_at); the statements that write and delete events keep the pair.
        db_constraint=False,
        related_name="+",
    )
    # Indexed by the unique constraint, which it leads.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, db_index=False, related_name="+")
    idempotency_key = models.CharField(max_length=255)
    # The event's `created_at`: its partition, for the lookup and for the partition's drop.
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "idempotency_key"], name="event_key_one_per_project"
            ),
        ]
        indexes = [
            # Serves the deletion of a dropped partition's keys.
            models.Index(fields=["created_at"], name="event_key_created_idx"),
        ]

    def __str__(self) -> str:
        return self.idempotency_key


class DeadLetteredEvent(Event):
    """The dead-letter queue as the admin shows it: events whose retries ran out."""

    class Meta:
        proxy = True
        verbose_name = "dead-lettered event"
        verbose_name_plural = "dead-letter queue"


class EventType(models.Model):
    """One catalog entry per project, event name and source: what the event looks like."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: event_type_project_created_idx and the unique
    # event_type_one_per_name_source lead with it.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, db_index=False, related_name="event_types"
    )
    event = models.CharField(max_length=200)
    source = models.CharField(max_length=16, choices=EventSource.choices)
    # Field path -> observed type tokens; `schema_hint` is rendered from it.
    field_types = models.JSONField(default=dict, blank=True)
    contains_pii = models.BooleanField(default=False)
    # Field paths that looked personal (by name or by value); never values.
    pii_fields = models.JSONField(default=list, blank=True)
    # The latest payload with every value masked; kept for the dashboard, never listed.
    example_payload = models.JSONField(default=dict, blank=True)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    occurrences_count = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=clock.now, editable=False)
    updated_at = models.DateTimeField(default=clock.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "event", "source"], name="event_type_one_per_name_source"
            ),
        ]
        indexes = [
            # Serves the cursor listing of a project's catalog.
            models.Index(
                fields=["project", "created_at", "id"], name="event_type_project_created_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} ({self.source})"
