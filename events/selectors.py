"""Reads of events and the event catalog."""

import datetime as dt
import uuid
from collections.abc import Iterable

from django.db import connection
from django.db.models import QuerySet

from config.bulk import rows_fetch
from events.models import UNPROCESSED_STATUSES, Event, EventType
from tenancy.models import Project

_OLDEST_UNPROCESSED = (  # noqa: S608 (names and constants of the model)
    "SELECT w.project_id, w.event, ("
    "SELECT e.created_at FROM {table} e "
    "WHERE e.project_id = w.project_id AND e.event = w.event AND e.status IN ({statuses}) "
    "ORDER BY e.created_at LIMIT 1) "
    "FROM unnest(%b::uuid[], %b::text[]) AS w(project_id, event)"
).format(
    table=connection.ops.quote_name(Event._meta.db_table),
    # Constants, spelled as the index's condition is, so the planner may use it.
    statuses=", ".join(f"'{status}'" for status in UNPROCESSED_STATUSES),
)


def events_oldest_unprocessed(
    *, names: Iterable[tuple[uuid.UUID, str]]
) -> dict[tuple[uuid.UUID, str], dt.datetime | None]:
    """For each (project id, event name): when the oldest event of that name in that
    project that is not processed yet (`UNPROCESSED_STATUSES`) was accepted, or None
    when every one is. One statement, an index lookup per pair (`event_unprocessed_idx`).
    An event whose insert has not committed yet is not seen."""
    pairs = sorted(set(names))
    if not pairs:
        return {}
    rows = rows_fetch(
        _OLDEST_UNPROCESSED,
        [
            [project_id for project_id, _ in pairs],
            [name for _, name in pairs],
        ],
    )
    return {(project_id, name): oldest for project_id, name, oldest in rows}


def event_type_list(
    *, project: Project, search: str | None = None, source: str | None = None
) -> QuerySet[EventType]:
    """The project's catalog, optionally by name substring (case-insensitive) and source."""
    entries = EventType.objects.filter(project=project)
    if search:
        entries = entries.filter(event__icontains=search)
    if source:
        entries = entries.filter(source=source)
    return entries
