"""The outbox of system events: how a family below the events app records a
`sendrealm.*` event without importing it.

The events app names the writer by dotted path in its apps.py; it is imported at first
use. The writer joins the caller's transaction, so the event exists exactly when the
change it reports does (a rolled-back change leaves no event). Deciding whether anything
changed, and so whether there is an event at all, stays with the caller. What runs once
the events are committed (the events app's wake-up of its workers) is named the same way,
and the outbox schedules it after the writer: the writer only writes rows.

A caller that writes its change and the event in one statement (a data-modifying CTE:
the contact upsert) asks the events app for the event's `INSERT` instead
(`system_events_insert_sql`, named the same way) and tells the outbox once it wrote
events (`system_events_recorded`), which schedules the same wake-up."""

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db import models, transaction
from django.utils.module_loading import import_string

from config.registries.hooks import Handlers, dotted_path


@dataclass(frozen=True)
class SystemEvent:
    """One system event to record: its payload and the contact it is about, with that
    contact's email and external id as they are now."""

    payload: dict[str, Any]
    contact_id: uuid.UUID | None = None
    email: str | None = None
    external_id: str | None = None


class SystemEventWriter(Protocol):
    def __call__(self, *, project: Any, name: str, events: Sequence[SystemEvent]) -> object: ...


class SystemEventStatement(Protocol):
    def __call__(self, *, project: Any, rows: str) -> tuple[str, dict[str, Any]]: ...


# The writer's import path, and the writer once imported.
_writer_path: str | None = None
_writer: SystemEventWriter | None = None
# The same for the builder of the event `INSERT` that a caller's statement embeds.
_statement_path: str | None = None
_statement: SystemEventStatement | None = None
# What runs after the commit of a transaction that recorded system events.
_committed: Handlers[Callable[[], object]] = Handlers()


def register_system_event_writer(writer: SystemEventWriter | str) -> None:
    """Installs the one writer: a callable, or the dotted path of one."""
    global _writer, _writer_path
    path = dotted_path(writer)
    if _writer_path is not None and _writer_path != path:
        raise ImproperlyConfigured("Another system event writer is already registered.")
    _writer_path = path
    _writer = None if isinstance(writer, str) else writer


def unregister_system_event_writer(writer: SystemEventWriter | str) -> None:
    global _writer, _writer_path
    if _writer_path == dotted_path(writer):
        _writer_path = _writer = None


def register_system_event_statement(builder: SystemEventStatement | str) -> None:
    """Installs the one builder of the event `INSERT` for `system_events_insert_sql`: a
    callable, or the dotted path of one."""
    global _statement, _statement_path
    path = dotted_path(builder)
    if _statement_path is not None and _statement_path != path:
        raise ImproperlyConfigured("Another system event statement is already registered.")
    _statement_path = path
    _statement = None if isinstance(builder, str) else builder


def unregister_system_event_statement(builder: SystemEventStatement | str) -> None:
    global _statement, _statement_path
    if _statement_path == dotted_path(builder):
        _statement_path = _statement = None


def register_system_events_committed(handler: Callable[[], object] | str) -> None:
    """Names what runs, without arguments, after the commit of a transaction that recorded
    system events (the wake-up of the workers that process them): a callable or the
    dotted path of one."""
    _committed.register(handler)


def unregister_system_events_committed(handler: Callable[[], object] | str) -> None:
    _committed.unregister(handler)


def system_event_emit(
    *,
    project: models.Model,
    name: str,
    payload: dict[str, Any],
    contact_id: uuid.UUID | None = None,
    email: str | None = None,
    external_id: str | None = None,
) -> None:
    """Records the system event `sendrealm.<name>` in the caller's transaction, linked to
    the contact and carrying its email and external id as they are now.

    Without a registered writer this raises rather than drop the event: the caller's
    transaction then rolls back, so no change goes unreported."""
    system_events_emit(
        project=project,
        name=name,
        events=[
            SystemEvent(
                payload=payload, contact_id=contact_id, email=email, external_id=external_id
            )
        ],
    )


def system_events_emit(*, project: models.Model, name: str, events: Sequence[SystemEvent]) -> None:
    """Records several `sendrealm.<name>` events of one project at once (one statement
    where the writer can), in the caller's transaction, as `system_event_emit` does one."""
    global _writer
    if not events:
        return
    if _writer is None and _writer_path is not None:
        _writer = import_string(_writer_path)
    if _writer is None:
        raise ImproperlyConfigured(
            f"No system event writer is registered (is the events app installed?); "
            f"`sendrealm.{name}` cannot be recorded."
        )
    _writer(project=project, name=name, events=events)
    system_events_recorded()


def system_events_insert_sql(*, project: models.Model, rows: str) -> tuple[str, dict[str, Any]]:
    """The `INSERT` that records one system event of `project` per row of `rows`, for a
    caller that writes its change and its events in one statement (one round trip).

    `rows` names a relation the caller's statement defines before it (a CTE) with the
    columns `id` (uuid, the event's), `name` (`contact.created` records
    `sendrealm.contact.created`), `contact_id` (uuid), `email`, `external_id` (text)
    and `payload` (jsonb): each the value `system_event_emit` takes. Returns the SQL, an
    `INSERT ... SELECT ... FROM <rows>` to put in a `WITH`, with named placeholders
    (`%(system_event_...)s`), and their values. The caller runs it in its transaction or
    alone (autocommit) and, when it wrote any event, calls `system_events_recorded`.

    Without a registered builder this raises, as `system_events_emit` does."""
    global _statement
    if _statement is None and _statement_path is not None:
        _statement = import_string(_statement_path)
    if _statement is None:
        raise ImproperlyConfigured(
            "No system event statement is registered (is the events app installed?); "
            "system events cannot be recorded."
        )
    return _statement(project=project, rows=rows)


def system_events_recorded() -> None:
    """Schedules what runs after the commit of the caller's transaction because it recorded
    system events (the event workers' wake-up); outside a transaction (a statement in
    autocommit, committed already) it runs now."""
    for handler in _committed.all():
        transaction.on_commit(handler)
