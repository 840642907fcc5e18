"""Ingest: commit the event row, answer, and let the workers find it (the table is the
outbox). One INSERT ... ON CONFLICT per request or per batch on PostgreSQL."""

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from config.api.errors import ServiceError
from config.db.bulk import statement_run
from config.db.cursor import binary_cursor
from config.runtime import clock
from events.models import Event
from events.validation import EventInput
from events.wake import events_wake
from tenancy.errors import PlanLimitExceeded
from tenancy.models import Meter, Project
from tenancy.usage import Reservation, usage_reserve

_TABLE = Event._meta.db_table
_COLUMNS = (
    "id, project_id, event, source, email, external_id, contact_ref, payload, occurred_at, "
    "idempotency_key, status, attempts, next_attempt_at, last_error, error_code, created_at"
)
# Conflicts on the partial unique index of (project, idempotency_key); rows without a key
# never conflict.
_ON_CONFLICT = (
    "ON CONFLICT (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
)
_INSERT_ONE = (
    f"INSERT INTO {_TABLE} ({_COLUMNS}) VALUES "  # noqa: S608 (constants only)
    "(%s, %s, %s, 'customer', %s, %s, %s, %s::jsonb, %s, %s, 'accepted', 0, %s, '', '', %s) "
    f"{_ON_CONFLICT} RETURNING id"
)
_INSERT_MANY = (
    f"INSERT INTO {_TABLE} ({_COLUMNS}) "  # noqa: S608 (constants only)
    "SELECT u.id, %b, u.event, 'customer', u.email, u.external_id, u.contact_ref, "
    "u.payload::jsonb, u.occurred_at, u.idempotency_key, 'accepted', 0, %b, '', '', %b "
    "FROM unnest(%b::uuid[], %b::text[], %b::text[], %b::text[], %b::uuid[], %b::text[], "
    "%b::timestamptz[], %b::text[]) "
    "AS u(id, event, email, external_id, contact_ref, payload, occurred_at, idempotency_key) "
    f"{_ON_CONFLICT} RETURNING id"
)
_SELECT_KEYED = (
    # S608: constants only.
    f"SELECT id, idempotency_key, event, status, created_at FROM {_TABLE} "  # noqa: S608
    "WHERE project_id = %s AND idempotency_key = ANY(%s)"
)


@dataclass(slots=True)
class IngestResult:
    """What the API answers for one submission."""

    id: uuid.UUID
    event: str
    idempotency_key: str | None
    status: str
    received_at: dt.datetime
    duplicate: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "event": self.event,
            "idempotency_key": self.idempotency_key,
            "status": self.status,
            "received_at": clock.iso_utc(self.received_at),
            "duplicate": self.duplicate,
        }


def _reserve(
    *, project: Project, items: list[EventInput]
) -> tuple[Reservation, dict[str, IngestResult]]:
    """Counts the items against the plan's monthly event quota before they are stored.
    Over the quota, resends of events already stored (by idempotency key) do not need
    room: they are answered as the duplicates they are, and only the new ones must fit
    (PlanLimitExceeded, nothing stored, when they do not)."""
    try:
        return usage_reserve(project=project, meter=Meter.EVENTS_INGESTED, count=len(items)), {}
    except PlanLimitExceeded:
        keys: list[str | None] = [item.idempotency_key for item in items if item.idempotency_key]
        known = _existing(project=project, keys=keys) if keys else {}
        if not known:
            raise
    new = [item for item in items if item.idempotency_key not in known]
    return usage_reserve(project=project, meter=Meter.EVENTS_INGESTED, count=len(new)), known


def event_ingest(*, project: Project, item: EventInput) -> IngestResult:
    """Stores one customer event (or finds the one its idempotency key already made),
    within the plan's monthly event quota (PlanLimitExceeded otherwise)."""
    reservation, known = _reserve(project=project, items=[item])
    if item.idempotency_key in known:
        return known[item.idempotency_key]
    with reservation:
        result = _ingest_one(project=project, item=item)
        reservation.settle(0 if result.duplicate else 1)
    return result


def _ingest_one(*, project: Project, item: EventInput) -> IngestResult:
    now = clock.now()
    new_id = uuid.uuid4()
    # Bound and prepared on the server: the one statement of every single ingest.
    rows = statement_run(
        _INSERT_ONE,
        [
            new_id,
            project.id,
            item.event,
            item.email,
            item.external_id,
            item.contact_ref,
            item.payload_json,
            item.occurred_at or now,
            item.idempotency_key,
            now,
            now,
        ],
        prepare=True,
    )
    inserted = bool(rows)
    if inserted:
        transaction.on_commit(events_wake)
        return IngestResult(new_id, item.event, item.idempotency_key, "accepted", now, False)
    existing = _existing(project=project, keys=[item.idempotency_key])
    # Not inserted means the idempotency key's unique index matched, so the key is set.
    return existing[item.idempotency_key]  # type: ignore[index]


def event_ingest_batch(
    *, project: Project, items: list[EventInput | ServiceError]
) -> list[IngestResult | ServiceError]:
    """Stores the valid items of a batch in one statement; invalid ones pass through as
    their errors, so one bad item never costs the others. The new events of the batch
    must fit in what is left of the plan's monthly event quota, all of them or none
    (PlanLimitExceeded, nothing stored)."""
    valid = [(index, item) for index, item in enumerate(items) if isinstance(item, EventInput)]
    if not valid:
        # No valid item: every item is a ServiceError.
        return list(items)  # type: ignore[arg-type]
    reservation, known = _reserve(project=project, items=[item for _, item in valid])
    # Each EventInput in it is replaced by its IngestResult in the loop below.
    results: list[IngestResult | ServiceError] = list(items)  # type: ignore[arg-type]
    fresh = []
    for index, item in valid:
        if item.idempotency_key in known:
            results[index] = known[item.idempotency_key]
        else:
            fresh.append((index, item))
    with reservation:
        inserted = _ingest_many(project=project, valid=fresh, results=results)
        reservation.settle(inserted)
    return results


def _ingest_many(
    *,
    project: Project,
    valid: list[tuple[int, EventInput]],
    results: list[IngestResult | ServiceError],
) -> int:
    """Inserts the items, fills in their results, and returns how many were new."""
    now = clock.now()
    ids = [uuid.uuid4() for _ in valid]
    if not valid:
        return 0
    with binary_cursor() as cursor:
        cursor.execute(
            _INSERT_MANY,
            [
                project.id,
                now,
                now,
                ids,
                [item.event for _, item in valid],
                [item.email for _, item in valid],
                [item.external_id for _, item in valid],
                [item.contact_ref for _, item in valid],
                [item.payload_json for _, item in valid],
                [item.occurred_at or now for _, item in valid],
                [item.idempotency_key for _, item in valid],
            ],
        )
        inserted = {row[0] for row in cursor.fetchall()}
    missing_keys = [
        item.idempotency_key
        for new_id, (_, item) in zip(ids, valid, strict=True)
        if new_id not in inserted
    ]
    existing = _existing(project=project, keys=missing_keys) if missing_keys else {}
    for new_id, (index, item) in zip(ids, valid, strict=True):
        if new_id in inserted:
            results[index] = IngestResult(
                new_id, item.event, item.idempotency_key, "accepted", now, False
            )
        else:
            # Not inserted means the idempotency key's unique index matched, so the key is set.
            results[index] = existing[item.idempotency_key]  # type: ignore[index]
    if inserted:
        transaction.on_commit(events_wake)
    return len(inserted)


def _existing(*, project: Project, keys: list[str | None]) -> dict[str, IngestResult]:
    """The stored events for idempotency keys that were already used (duplicates)."""
    with connection.cursor() as cursor:
        cursor.execute(_SELECT_KEYED, [project.id, list(set(keys))])
        rows = cursor.fetchall()
    return {
        key: IngestResult(event_id, name, key, status, created_at, True)
        for event_id, key, name, status, created_at in rows
    }
