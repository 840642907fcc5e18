"""Retention: events older than the project's `event_retention_days` are deleted."""

import datetime as dt

from config.runtime import clock
from events.models import Event, EventStatus
from tenancy.selectors import project_retention_list

PURGE_BATCH = 5000
PURGE_MAX_ROWS_PER_RUN = 100_000


def events_purge_expired(
    *, batch_size: int = PURGE_BATCH, max_rows: int = PURGE_MAX_ROWS_PER_RUN
) -> int:
    """Deletes expired events in bounded batches (short statements, no long locks); a run
    stops after `max_rows` and the next run continues."""
    now = clock.now()
    deleted = 0
    for project_id, days in project_retention_list(fields=["event_retention_days"]):
        cutoff = now - dt.timedelta(days=days)
        while deleted < max_rows:
            ids = list(
                Event.objects.filter(project_id=project_id, created_at__lt=cutoff)
                .exclude(status=EventStatus.PROCESSING)
                .order_by("created_at")
                .values_list("id", flat=True)[: min(batch_size, max_rows - deleted)]
            )
            if not ids:
                break
            _, per_model = Event.objects.filter(id__in=ids).delete()
            # Count events only: rows that go with them by cascade are not the bound.
            deleted += per_model.get(Event._meta.label, 0)
        if deleted >= max_rows:
            break
    return deleted
