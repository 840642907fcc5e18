"""The event catalog, updated once per processed micro-batch.

Ingest never touches the catalog, and a worker aggregates its whole batch into one row
change per (project, event, source): busy event names cost one short row lock per batch,
not one per event. Each counted event is stamped `cataloged_at` in the same transaction,
so a retry or a redelivered batch never counts an event twice.
"""

import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q

from config import clock
from events.models import Event, EventStatus, EventType
from events.shapes import Observation, merge_types, redact


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
        aggregates: dict[tuple[Any, str, str], _Aggregate] = {}
        for _, project_id, name, source, payload, created_at in rows:
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
            entry.occurrences_count += seen.count
            entry.first_seen_at = min(entry.first_seen_at, seen.first_seen)
            entry.last_seen_at = max(entry.last_seen_at, seen.last_seen)
            entry.field_types = merge_types(entry.field_types, seen.observation.types)
            pii = set(entry.pii_fields) | seen.observation.pii
            entry.pii_fields = sorted(pii)[:300]
            entry.contains_pii = bool(pii)
            if seen.example is not None:
                entry.example_payload = redact(seen.example)
            entry.updated_at = now
        EventType.objects.bulk_update(
            entries,
            [
                "occurrences_count",
                "first_seen_at",
                "last_seen_at",
                "field_types",
                "pii_fields",
                "contains_pii",
                "example_payload",
                "updated_at",
            ],
        )
        Event.objects.filter(id__in=[row[0] for row in rows]).update(cataloged_at=now)
    return len(rows)


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
