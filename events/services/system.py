"""System events: what the platform itself reports under the reserved prefix. This is the
writer behind `config.outbox`, through which the families below events record them."""

import uuid
from collections.abc import Sequence
from typing import Any

from django.db import transaction

from config import clock
from config.outbox import SystemEvent
from events.models import SYSTEM_PREFIX, Event, EventSource
from events.wake import events_wake
from tenancy.models import Project


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
    event = SystemEvent(
        payload=payload, contact_id=contact_id, email=email, external_id=external_id
    )
    return emit_system_events(project=project, name=name, events=[event])[0]


def emit_system_events(
    *, project: Project, name: str, events: Sequence[SystemEvent]
) -> list[Event]:
    """Records several platform events of one name in the caller's transaction, in one
    statement: the writer behind `config.outbox`."""
    now = clock.now()
    rows = [
        Event(
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
        for each in events
    ]
    if len(rows) == 1:
        rows[0].save(force_insert=True)
    else:
        Event.objects.bulk_create(rows)
    transaction.on_commit(events_wake)
    return rows
