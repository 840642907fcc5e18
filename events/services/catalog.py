"""The event catalog, updated once per processed micro-batch.

Ingest never touches the catalog, and a worker aggregates its whole batch into one row
change per (project, event, source): busy event names cost one short row lock per batch,
not one per event. A worker counts its batch in the transaction that processes it, and
each counted event is stamped `cataloged_at` in that same commit, so a retry or a
redelivered batch never counts an event twice; what a worker could not count is counted
by the sweep (`event_types_record_backlog`).
"""

import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q

from config.runtime import clock
from events.models import Event, EventStatus, EventType
from events.shapes import Observation, merge_types, path_names_an_id, redact


@dataclass
class _Aggregate:
    count: int = 0
    first_seen: Any = None
    last_seen: Any = None
    example: Any = None
    observation: Observation = field(default_factory=Observation)


def event_types_record(*, event_ids: Iterable[uuid.UUID]) -> int:
    """Counts processed, not yet counted events into their catalog entries."""
    ids = list(event_ids)
    if not ids:
        return 0
    now = clock.now()
    with transaction.atomic():
        rows = list(
            Event.objects.select_for_update(skip_locked=True)
            .filter(id__in=ids, status=EventStatus.PROCESSED, cataloged_at__isnull=True)
            .order_by("created_at")
            .values_list("id", "project_id", "event", "source", "payload", "created_at")
        )
        if not rows:
            return 0
        _count([row[1:] for row in rows], now=now)
        Event.objects.filter(id__in=[row[0] for row in rows]).update(cataloged_at=now)
    return len(rows)


def event_types_count(*, events: Iterable[Event]) -> None:
    """Counts events into their catalog entries inside the caller's transaction, which
    processes them and stamps them `cataloged_at` in the same commit."""
    rows = sorted(
        ((e.project_id, e.event, e.source, e.payload, e.created_at) for e in events),
        key=lambda row: row[4],
    )
    if rows:
        _count(rows, now=clock.now())


def _count(rows: list[tuple[Any, str, str, Any, dt.datetime]], *, now: dt.datetime) -> None:
    """Applies (project_id, event, source, payload, created_at) rows, oldest first, to the
    catalog: one change per entry, entries locked in a fixed order."""
    aggregates: dict[tuple[Any, str, str], _Aggregate] = {}
    for project_id, name, source, payload, created_at in rows:
        seen = aggregates.setdefault((project_id, name, source), _Aggregate())
        seen.count += 1
        seen.first_seen = created_at if seen.first_seen is None else seen.first_seen
        seen.last_seen = created_at
        if isinstance(payload, dict):
            seen.observation.add(payload)
            seen.example = payload
    keys = sorted(aggregates, key=lambda k: (str(k[0]), k[1], k[2]))
    # Make sure every entry exists (sorted inserts, so two workers never deadlock),
    # then lock them in the same order and merge.
    EventType.objects.bulk_create(
        [
            EventType(
                project_id=project_id,
                event=name,
                source=source,
                first_seen_at=aggregates[(project_id, name, source)].first_seen,
                last_seen_at=aggregates[(project_id, name, source)].last_seen,
                created_at=now,
                updated_at=now,
            )
            for project_id, name, source in keys
        ],
        ignore_conflicts=True,
    )
    match = Q()
    for project_id, name, source in keys:
        match |= Q(project_id=project_id, event=name, source=source)
    entries = list(
        EventType.objects.select_for_update()
        .filter(match)
        .order_by("project_id", "event", "source")
    )
    for entry in entries:
        seen = aggregates[(entry.project_id, entry.event, entry.source)]
        # An id stored as flagged by its name (`email_id`, by the words before `_id`) loses
        # the flag here; this batch flags the path again if its values look personal.
        stored = {path for path in entry.pii_fields if not path_names_an_id(path)}
        pii = stored | seen.observation.pii
        changes: dict[str, Any] = {
            "occurrences_count": entry.occurrences_count + seen.count,
            "first_seen_at": min(entry.first_seen_at, seen.first_seen),
            "last_seen_at": max(entry.last_seen_at, seen.last_seen),
            "field_types": merge_types(entry.field_types, seen.observation.types),
            "pii_fields": sorted(pii)[:300],
            "contains_pii": bool(pii),
            "updated_at": now,
        }
        if seen.example is not None:
            changes["example_payload"] = redact(seen.example)
        # One plain UPDATE per entry: a batch names few, and bulk_update's CASE per
        # column cost more to build than the statements it saves.
        EventType.objects.filter(pk=entry.pk).update(**changes)


def event_types_record_backlog(*, older_than_seconds: float = 60, limit: int = 500) -> int:
    """Counts processed events a worker left uncounted (it stopped between the two steps)."""
    cutoff = clock.now() - dt.timedelta(seconds=older_than_seconds)
    ids = list(
        Event.objects.filter(
            status=EventStatus.PROCESSED, cataloged_at__isnull=True, processed_at__lte=cutoff
        )
        .order_by("processed_at")
        .values_list("id", flat=True)[:limit]
    )
    return event_types_record(event_ids=ids)
