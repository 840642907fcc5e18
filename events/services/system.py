"""System events: what the platform itself reports under the reserved prefix. This is the
writer behind `config.registries.outbox`, through which the families below events record them. It
only writes rows, in the caller's transaction: the outbox wakes the event workers after
commit (`events.wake.events_wake`, named in events/apps.py)."""

import json
import uuid
from collections.abc import Sequence
from typing import Any

from django.db import connections, router

from config.db.bulk import statement_run
from config.registries.outbox import SystemEvent
from config.runtime import clock
from events.models import SYSTEM_PREFIX, Event, EventSource
from tenancy.models import Project


def _event_row(*, project: Project, name: str, each: SystemEvent, now: Any) -> Event:
    return Event(
        project=project,
        event=f"{SYSTEM_PREFIX}{name}",
        source=EventSource.SYSTEM,
        contact_id=each.contact_id,
        email=each.email,
        external_id=each.external_id,
        payload=each.payload,
        occurred_at=now,
        next_attempt_at=now,
        created_at=now,
    )


def emit_system_event(
    *,
    project: Project,
    name: str,
    payload: dict[str, Any],
    contact_id: uuid.UUID | None = None,
    email: str | None = None,
    external_id: str | None = None,
) -> Event:
    """Records a platform event (`sendrealm.<name>`) in the caller's transaction, so it
    exists exactly when the change it reports does. It is processed like any event."""
    each = SystemEvent(payload=payload, contact_id=contact_id, email=email, external_id=external_id)
    row = _event_row(project=project, name=name, each=each, now=clock.now())
    row.save(force_insert=True)
    return row


# What differs from one event of a batch to the next; every other column is the same.
_PER_ROW: dict[str, str] = {
    "id": "uuid",
    "contact_id": "uuid",
    "email": "text",
    "external_id": "text",
    "payload": "text",
}


def emit_system_events(*, project: Project, name: str, events: Sequence[SystemEvent]) -> None:
    """Records several platform events of one name in the caller's transaction, in one
    statement: the writer behind `config.registries.outbox`.

    The columns every event shares are prepared once, from one model instance, and bound
    once; the rest go as one array each (`unnest`), bound on the server in binary
    (`config.db.bulk`). A model instance and a bound value per column and event (as
    `bulk_create` makes) cost more than the insert, and so did Django's client-side
    binding quoting each array element into the statement; a worker writes these for
    every message it sends."""
    if len(events) == 1:
        emit_system_event(
            project=project,
            name=name,
            payload=events[0].payload,
            contact_id=events[0].contact_id,
            email=events[0].email,
            external_id=events[0].external_id,
        )
        return
    now = clock.now()
    connection = connections[router.db_for_write(Event)]
    template = _event_row(project=project, name=name, each=SystemEvent(payload={}), now=now)
    encoder = Event._meta.get_field("payload").encoder
    arrays: dict[str, list[Any]] = {
        "id": [uuid.uuid4() for _ in events],
        "contact_id": [each.contact_id for each in events],
        "email": [each.email for each in events],
        "external_id": [each.external_id for each in events],
        "payload": [json.dumps(each.payload, cls=encoder) for each in events],
    }
    columns: list[str] = []
    selected: list[str] = []
    params: list[Any] = []
    quote = connection.ops.quote_name
    for field in Event._meta.concrete_fields:
        db_type = field.db_type(connection)
        columns.append(quote(field.column))
        if field.attname in _PER_ROW:
            selected.append(f"r.{field.attname}::{db_type}")
        else:
            selected.append(f"%b::{db_type}")
            params.append(field.get_db_prep_save(getattr(template, field.attname), connection))
    unnest = ", ".join(f"%b::{kind}[]" for kind in _PER_ROW.values())
    sql = (
        # S608: names from the model.
        f"INSERT INTO {quote(Event._meta.db_table)} ({', '.join(columns)}) "  # noqa: S608
        f"SELECT {', '.join(selected)} FROM unnest({unnest}) AS r({', '.join(_PER_ROW)})"
    )
    statement_run(sql, [*params, *(arrays[name] for name in _PER_ROW)])
