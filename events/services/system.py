"""System events: what the platform itself reports under the reserved prefix. This is the
writer behind `config.outbox`, through which the families below events record them."""

import uuid
from typing import Any

from django.db import transaction

from config import clock
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
    now = clock.now()
    event = Event.objects.create(
        project=project,
        event=f"{SYSTEM_PREFIX}{name}",
        source=EventSource.SYSTEM,
        contact_id=contact_id,
        email=email,
        external_id=external_id,
        payload=payload,
        occurred_at=now,
        next_attempt_at=now,
        created_at=now,
    )
    transaction.on_commit(events_wake)
    return event
