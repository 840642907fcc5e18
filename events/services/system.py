"""System events: what the platform itself reports under the reserved prefix. This is the
writer behind `config.registries.outbox`, through which the families below events record them. It
only writes rows, in the caller's transaction: the outbox wakes the event workers after
commit (`events.wake.events_wake`, named in events/apps.py)."""

import functools
import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connections, router
from psycopg import sql as psycopg_sql

from config.db.bulk import statement_run
from config.db.ids import uuid7
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


def _insert_sql(
    *,
    project: Project,
    name: str,
    now: Any,
    rows: str,
    per_row: dict[str, str],
    bind: Callable[[str, Any], str],
) -> str:
    """`INSERT INTO <events> (...) SELECT ... FROM <rows>`: the columns in `per_row` (an
    attname and the expression that reads it off `rows`) differ from one event to the
    next; every other one is the same for all and is bound once (`bind` returns its
    placeholder), its value prepared from one model instance as `save` would write it."""
    connection = connections[router.db_for_write(Event)]
    template = _event_row(project=project, name=name, each=SystemEvent(payload={}), now=now)
    quote = connection.ops.quote_name
    columns: list[str] = []
    selected: list[str] = []
    for field in Event._meta.concrete_fields:
        columns.append(quote(field.column))
        if field.attname in per_row:
            read = per_row[field.attname]
        else:
            value = field.get_db_prep_save(getattr(template, field.attname), connection)
            read = bind(field.attname, value)
        selected.append(f"({read})::{field.db_type(connection)}")
    return (
        # S608: names from the model; `rows` is the caller's relation.
        f"INSERT INTO {quote(Event._meta.db_table)} ({', '.join(columns)}) "  # noqa: S608
        f"SELECT {', '.join(selected)} FROM {rows}"
    )


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
    encoder = Event._meta.get_field("payload").encoder
    arrays: dict[str, list[Any]] = {
        "id": [uuid7() for _ in events],
        "contact_id": [each.contact_id for each in events],
        "email": [each.email for each in events],
        "external_id": [each.external_id for each in events],
        "payload": [json.dumps(each.payload, cls=encoder) for each in events],
    }
    params: list[Any] = []

    def bind(attname: str, value: Any) -> str:
        params.append(value)
        return "%b"

    unnest = ", ".join(f"%b::{kind}[]" for kind in _PER_ROW.values())
    sql = _insert_sql(
        project=project,
        name=name,
        now=clock.now(),
        rows=f"unnest({unnest}) AS r({', '.join(_PER_ROW)})",
        per_row={attname: f"r.{attname}" for attname in _PER_ROW},
        bind=bind,
    )
    statement_run(sql, [*params, *(arrays[name] for name in _PER_ROW)])


def system_events_insert_sql(*, project: Project, rows: str) -> tuple[str, dict[str, Any]]:
    """The `INSERT` of one system event per row of the caller's relation `rows` (columns
    `id`, `name`, `contact_id`, `email`, `external_id`, `payload`), with its named
    parameters: the builder behind `config.registries.outbox.system_events_insert_sql`,
    for a caller that writes its change and its events in one statement. The rows are
    those `emit_system_event` writes."""
    return _insert_plan(rows), {_PROJECT: project.id, _NOW: clock.now()}


_PARAM = "system_event_{}"
# The columns whose values are the acting project and the time of the write: bound, the
# three times as one value. Every other shared value is the same for every event and is
# written into the statement, which is made once per relation (a contact upsert asks on
# every call): psycopg converted and dumped each placeholder's value on every call, twelve
# constants of each upsert.
_AT_NOW = ("occurred_at", "next_attempt_at", "created_at")
_NOW = _PARAM.format("now")
_PROJECT = _PARAM.format("project_id")


@functools.cache
def _insert_plan(rows: str) -> str:
    bound: set[str] = set()

    def bind(attname: str, value: Any) -> str:
        if attname == "project_id" or attname in _AT_NOW:
            key = _NOW if attname in _AT_NOW else _PROJECT
            bound.add(key)
            return f"%({key})s"
        # A constant as a quoted literal, its `%` doubled for the placeholders' syntax.
        return psycopg_sql.Literal(value).as_string().replace("%", "%%")

    per_row = {
        "id": f"{rows}.id",
        "event": f"{bind('prefix', SYSTEM_PREFIX)}::text || {rows}.name",
        "contact_id": f"{rows}.contact_id",
        "email": f"{rows}.email",
        "external_id": f"{rows}.external_id",
        "payload": f"{rows}.payload",
    }
    # Any project and moment: their values are replaced on each call.
    sql = _insert_sql(
        project=Project(id=uuid.UUID(int=0)),
        name="",
        now=clock.now(),
        rows=rows,
        per_row=per_row,
        bind=bind,
    )
    if bound != {_PROJECT, _NOW}:
        raise ImproperlyConfigured("The event row no longer has the project and time columns.")
    return sql
