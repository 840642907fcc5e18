"""Ingest: commit the event row, answer, and let the workers find it (the table is the
outbox). One statement per request or per batch on PostgreSQL: the idempotency keys'
`INSERT ... ON CONFLICT` and the events' `INSERT` of the new ones."""

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from config.api.errors import ServiceError
from config.db.bulk import statement_run
from config.db.ids import uuid7, uuid7_texts
from config.runtime import clock
from events.models import Event, EventKey
from events.validation import EventInput
from events.wake import events_wake
from tenancy.errors import PlanLimitExceeded
from tenancy.models import Meter, Project
from tenancy.usage import Reservation, usage_reserve

_TABLE = Event._meta.db_table
_KEYS = EventKey._meta.db_table
_COLUMNS = (
    "id, project_id, event, source, email, external_id, contact_ref, payload, occurred_at, "
    "idempotency_key, status, attempts, next_attempt_at, last_error, error_code, created_at"
)
# An event with an idempotency key is stored only if its key is new: the key's row
# (EventKey, unique per project and key across every partition of the events table) is
# written first in the same statement, and a key already taken, even by a transaction not
# committed yet (the insert waits for it), stores nothing. Rows without a key always are.
_KEYED = (
    f"keyed AS (INSERT INTO {_KEYS} (event_id, project_id, idempotency_key, created_at) "  # noqa: S608
    "SELECT {id}, {project}, {key}, {now} FROM {rows} WHERE {key} IS NOT NULL "
    "ON CONFLICT (project_id, idempotency_key) DO NOTHING RETURNING event_id)"
)
_INSERT_ONE = (
    # S608: constants only.
    "WITH v AS (SELECT %s::uuid AS id, %s::uuid AS project_id, "  # noqa: S608
    "%s::varchar AS key, %s::timestamptz AS now), "
    + _KEYED.format(id="v.id", project="v.project_id", key="v.key", now="v.now", rows="v")
    + f" INSERT INTO {_TABLE} ({_COLUMNS}) "  # noqa: S608
    "SELECT v.id, v.project_id, %s, 'customer', %s, %s, %s, %s::jsonb, %s, v.key, "
    "'accepted', 0, v.now, '', '', v.now FROM v "
    "WHERE v.key IS NULL OR EXISTS (SELECT FROM keyed) RETURNING id"
)
_INSERT_MANY = (
    # S608: constants only. The ids come as one text (`uuid7_texts`, joined by commas); a
    # column whose every value is null comes as an empty array, which `unnest` pads with
    # nulls to the ids' length, and so does `occurred_at` when no item gives one. Every
    # event without a key is stored, so only the keyed ones that were are returned.
    "WITH u AS (SELECT * FROM unnest(string_to_array(%b, ',')::uuid[], "  # noqa: S608
    "%b::text[], %b::text[], %b::text[], %b::uuid[], %b::text[], %b::timestamptz[], %b::text[]) "
    "AS u(id, event, email, external_id, contact_ref, payload, occurred_at, idempotency_key)), "
    "v AS (SELECT %b::uuid AS project_id, %b::timestamptz AS now), "
    + _KEYED.format(
        id="u.id", project="v.project_id", key="u.idempotency_key", now="v.now", rows="u, v"
    )
    + f", stored AS (INSERT INTO {_TABLE} ({_COLUMNS}) "  # noqa: S608
    "SELECT u.id, v.project_id, u.event, 'customer', u.email, u.external_id, u.contact_ref, "
    "u.payload::jsonb, coalesce(u.occurred_at, v.now), u.idempotency_key, 'accepted', 0, "
    "v.now, '', '', v.now FROM u, v "
    "WHERE u.idempotency_key IS NULL OR u.id IN (SELECT event_id FROM keyed)) "
    "SELECT event_id FROM keyed"
)
_SELECT_KEYED = (
    # S608: constants only. The key's `created_at` is its event's: the lookup reads the
    # one partition that holds it.
    f"SELECT e.id, k.idempotency_key, e.event, e.status, e.created_at FROM {_KEYS} k "  # noqa: S608
    f"JOIN {_TABLE} e ON e.id = k.event_id AND e.created_at = k.created_at "
    "WHERE k.project_id = %s AND k.idempotency_key = ANY(%s)"
)


@dataclass(slots=True)
class IngestResult:
    """What the API answers for one submission."""

    # A batch's new events carry their id as text (`uuid7_texts`), as the answer gives it.
    id: uuid.UUID | str
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
    new_id = uuid7()
    # Bound and prepared on the server: the one statement of every single ingest.
    rows = statement_run(
        _INSERT_ONE,
        [
            new_id,
            project.id,
            item.idempotency_key,
            now,
            item.event,
            item.email,
            item.external_id,
            item.contact_ref,
            item.payload_json,
            item.occurred_at or now,
        ],
        prepare=True,
    )
    inserted = bool(rows)
    if inserted:
        transaction.on_commit(events_wake)
        return IngestResult(new_id, item.event, item.idempotency_key, "accepted", now, False)
    existing = _existing(project=project, keys=[item.idempotency_key])
    # Not inserted means the idempotency key was taken, so the key is set.
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
    if not valid:
        return 0
    now = clock.now()
    ids = uuid7_texts(len(valid))
    items = [item for _, item in valid]
    keys = [item.idempotency_key for item in items]
    # Bound and prepared on the server: the same statement for every batch, whatever its size.
    rows = statement_run(
        _INSERT_MANY,
        [
            ",".join(ids),
            [item.event for item in items],
            _column([item.email for item in items]),
            _column([item.external_id for item in items]),
            _column([item.contact_ref for item in items]),
            [item.payload_json for item in items],
            _column([item.occurred_at for item in items]),
            _column(keys),
            project.id,
            now,
        ],
        prepare=True,
    )
    keyed = {str(row[0]) for row in rows}
    missing_keys: list[str | None] = [
        key
        for new_id, key in zip(ids, keys, strict=True)
        if key is not None and new_id not in keyed
    ]
    existing = _existing(project=project, keys=missing_keys) if missing_keys else {}
    inserted = 0
    for new_id, (index, item) in zip(ids, valid, strict=True):
        key = item.idempotency_key
        if key is None or new_id in keyed:
            results[index] = IngestResult(new_id, item.event, key, "accepted", now, False)
            inserted += 1
        else:
            # Not inserted means the idempotency key was taken.
            results[index] = existing[key]
    if inserted:
        transaction.on_commit(events_wake)
    return inserted


def _column(values: list[Any]) -> list[Any]:
    """A column's values, or none when every one is null (the statement reads an empty
    array as nulls): an array of nulls costs as much to send as one of values."""
    return [] if values.count(None) == len(values) else values


def _existing(*, project: Project, keys: list[str | None]) -> dict[str, IngestResult]:
    """The stored events for idempotency keys that were already used (duplicates)."""
    with connection.cursor() as cursor:
        cursor.execute(_SELECT_KEYED, [project.id, list(set(keys))])
        rows = cursor.fetchall()
    return {
        key: IngestResult(event_id, name, key, status, created_at, True)
        for event_id, key, name, status, created_at in rows
    }
