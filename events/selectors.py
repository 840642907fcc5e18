"""Reads of events and the event catalog."""

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from config.db.bulk import rows_fetch
from events.models import UNPROCESSED_STATUSES, Event, EventStatus, EventType
from tenancy.models import Project

_TABLE = connection.ops.quote_name(Event._meta.db_table)
# Constants, spelled as the index's condition is, so the planner may use it.
_UNPROCESSED = ", ".join(f"'{status}'" for status in UNPROCESSED_STATUSES)
# Per window: a row for an unprocessed event of the project and name accepted in it (the
# first the index finds; `event_unprocessed_idx`), then the contact's processed events of
# that name accepted in it, oldest first (the contact's index). Only the model's names and
# constants are formatted in.
_IN_WINDOWS = (
    # S608: names and constants only.
    "SELECT w.n, e.pending, e.id, e.payload, e.created_at FROM unnest(%b::uuid[], %b::uuid[], "  # noqa: S608
    "%b::text[], %b::timestamptz[], %b::timestamptz[]) WITH ORDINALITY "
    "AS w(project_id, contact_id, event, opened, deadline, n) CROSS JOIN LATERAL ("
    "(SELECT true AS pending, NULL::uuid AS id, NULL::jsonb AS payload, "
    f"NULL::timestamptz AS created_at FROM {_TABLE} p "
    "WHERE p.project_id = w.project_id AND p.event = w.event "
    f"AND p.status IN ({_UNPROCESSED}) "
    "AND p.created_at >= w.opened AND p.created_at < w.deadline LIMIT 1) "
    f"UNION ALL (SELECT false, d.id, d.payload, d.created_at FROM {_TABLE} d "
    "WHERE d.contact_id = w.contact_id AND d.event = w.event "
    f"AND d.status = '{EventStatus.PROCESSED.value}' "
    "AND d.created_at >= w.opened AND d.created_at < w.deadline "
    "ORDER BY d.created_at, d.id LIMIT %b)) e"
)
# A window's processed events read at most: a contact's events of one name within one
# wait's life.
MAX_PROCESSED_PER_WINDOW = 100
_NO_CONTACT = uuid.UUID(int=0)


@dataclass(frozen=True)
class EventWindow:
    """Events of one name accepted from `opened` (included) until `deadline` (excluded):
    in a project, and for the contact they were resolved to once processed."""

    project_id: uuid.UUID
    contact_id: uuid.UUID | None
    event: str
    opened: dt.datetime
    deadline: dt.datetime


@dataclass
class WindowEvents:
    """What a window holds: whether an event of the project and name accepted in it is not
    processed yet (its contact is not known until it is), and the contact's processed
    events in it, oldest first, as (id, payload), and when each was accepted (`accepted`,
    in the same order)."""

    pending: bool = False
    processed: list[tuple[uuid.UUID, Any]] = field(default_factory=list)
    accepted: list[dt.datetime] = field(default_factory=list)


def events_in_windows(*, windows: list[EventWindow]) -> list[WindowEvents]:
    """What each window holds, in the order given: one statement, an index lookup per
    window for the unprocessed events and one for the contact's processed ones. An event
    whose insert has not committed yet is not seen."""
    found = [WindowEvents() for _ in windows]
    if not windows:
        return found
    rows = rows_fetch(
        _IN_WINDOWS,
        [
            [window.project_id for window in windows],
            [window.contact_id or _NO_CONTACT for window in windows],
            [window.event for window in windows],
            [window.opened for window in windows],
            [window.deadline for window in windows],
            MAX_PROCESSED_PER_WINDOW,
        ],
    )
    for n, pending, event_id, payload, accepted in rows:
        held = found[n - 1]
        if pending:
            held.pending = True
        else:
            held.processed.append((event_id, payload))
            held.accepted.append(accepted)
    return found


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
