"""Retention: events older than the project's `event_retention_days` are deleted, with
their idempotency keys.

The events table is partitioned by `created_at` (config/db/partitions.py): a partition is
dropped whole once no project keeps any of its rows (`events_longest_retention_days`),
its keys deleted first (`event_keys_drop`); until then, each project's own policy is
applied here, row by row, inside the partitions (and in the default partition)."""

import datetime as dt

from django.db import connection, transaction

from config.runtime import clock
from events.models import Event, EventKey, EventStatus
from tenancy.selectors import project_retention_list, project_retention_longest

PURGE_BATCH = 5000
PURGE_MAX_ROWS_PER_RUN = 100_000

_TABLE = connection.ops.quote_name(Event._meta.db_table)
_KEYS = connection.ops.quote_name(EventKey._meta.db_table)
# One batch of a project's expired events and their keys, oldest first; an event being
# processed stays until its worker is done with it. Raw SQL cascades nothing: the keys are
# the only rows that point at events, and a table that comes to point at them must be
# deleted here too.
_PURGE = (
    # S608: names from the models.
    f"WITH doomed AS (SELECT id, created_at FROM {_TABLE} "  # noqa: S608
    "WHERE project_id = %s AND created_at < %s AND status <> %s "
    "ORDER BY created_at LIMIT %s), "
    f"keys AS (DELETE FROM {_KEYS} k USING doomed d WHERE k.event_id = d.id) "
    f"DELETE FROM {_TABLE} e USING doomed d WHERE e.id = d.id AND e.created_at = d.created_at "
    "RETURNING e.id"
)
_KEYS_DROP = f"DELETE FROM {_KEYS} WHERE created_at >= %s AND created_at < %s"  # noqa: S608


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
            limit = min(batch_size, max_rows - deleted)
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(_PURGE, [project_id, cutoff, EventStatus.PROCESSING.value, limit])
                gone = len(cursor.fetchall())
            if not gone:
                break
            deleted += gone
        if deleted >= max_rows:
            break
    return deleted


def events_longest_retention_days() -> int | None:
    """The longest any project keeps its events: an events partition whose rows are all
    older than that is dropped whole (None, no project: every partition stays)."""
    return project_retention_longest(field="event_retention_days")


def event_keys_drop(*, lower: dt.datetime, upper: dt.datetime) -> None:
    """Deletes the idempotency keys of the events accepted in [lower, upper): those of the
    partition about to be dropped, in its transaction."""
    with connection.cursor() as cursor:
        cursor.execute(_KEYS_DROP, [lower, upper])
