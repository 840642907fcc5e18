"""The columns that make a row a unit of work, and the indexes the claim needs."""

from django.db import models


class WorkStatus(models.TextChoices):
    ACCEPTED = "accepted"
    PROCESSING = "processing"
    PROCESSED = "processed"
    FAILED = "failed"
    DEAD_LETTERED = "dead_lettered"


# Waiting for an attempt: new, or failed and due again at `next_attempt_at`.
DUE_STATUSES = (WorkStatus.ACCEPTED.value, WorkStatus.FAILED.value)


class WorkItem(models.Model):
    """A unit of work: its state and its attempts live on the row (the table is the queue).
    A family keeps its own domain state beside `status` when it needs more states."""

    status = models.CharField(
        max_length=16, choices=WorkStatus.choices, default=WorkStatus.ACCEPTED
    )
    # Claims so far (a worker that dies mid-way also used one), so a poison row that
    # kills workers still ends in the dead-letter queue.
    attempts = models.PositiveIntegerField(default=0)
    # When the row is due (again); null once it is done or dead-lettered.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # While `processing`: who holds the claim and until when; an expired lease is
    # claimable again, which is how a killed worker's rows still get processed.
    claim_token = models.UUIDField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    # A short machine-readable class of `last_error`, for the dead-letter filter.
    error_code = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        abstract = True


def due_index(name: str) -> models.Index:
    """Serves the claim: rows waiting for (another) attempt, by when they are due."""
    return models.Index(
        fields=["next_attempt_at"],
        condition=models.Q(status__in=list(DUE_STATUSES)),
        name=name,
    )


def lease_index(name: str) -> models.Index:
    """Serves the takeover of rows whose worker died: expired leases."""
    return models.Index(
        fields=["lease_expires_at"],
        condition=models.Q(status=WorkStatus.PROCESSING.value),
        name=name,
    )


def dead_letter_index(name: str) -> models.Index:
    """Serves the dead-letter list and its count (the staff dashboard, metrics)."""
    return models.Index(
        fields=["next_attempt_at"],
        condition=models.Q(status=WorkStatus.DEAD_LETTERED.value),
        name=name,
    )
