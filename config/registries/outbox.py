"""The outbox of system events: how a family below the events app records a
`sendrealm.*` event without importing it.

The events app names the writer by dotted path in its apps.py; it is imported at first
use. The writer joins the caller's transaction, so the event exists exactly when the
change it reports does (a rolled-back change leaves no event). Deciding whether anything
changed, and so whether there is an event at all, stays with the caller. What runs once
the events are committed (the events app's wake-up of its workers) is named the same way,
and the outbox schedules it after the writer: the writer only writes rows."""

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


# The writer's import path, and the writer once imported.
_writer_path: str | None = None
_writer: SystemEventWriter | None = None
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
    for handler in _committed.all():
        transaction.on_commit(handler)
