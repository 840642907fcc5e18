"""Writes of events."""

from typing import Any

from config import clock
from events.models import SYSTEM_PREFIX, Event, EventSource
from tenancy.models import Project


def emit_system_event(
    *, project: Project, name: str, contact: Any, payload: dict[str, Any]
) -> Event:
    """Records a platform event (`sendrealm.<name>`) in the caller's transaction, so it
    exists exactly when the change it reports does. It is processed like any event."""
    now = clock.now()
    return Event.objects.create(
        project=project,
        event=f"{SYSTEM_PREFIX}{name}",
        source=EventSource.SYSTEM,
        contact=contact,
        email=getattr(contact, "email", None),
        external_id=getattr(contact, "external_id", None),
        payload=payload,
        occurred_at=now,
        next_attempt_at=now,
    )
