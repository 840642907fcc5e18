"""The events of a contact on its timeline in the staff console (contacts.hooks);
system events among them show its subscription and membership changes."""

import datetime as dt
from typing import Any

from contacts.models import Contact
from contacts.timeline import TimelineEntry, admin_change_url
from events.models import Event


def event_timeline(
    *, contact: Contact, before: dt.datetime | None, limit: int, user: Any
) -> list[TimelineEntry]:
    """The contact's events, newest first (one query)."""
    events = Event.objects.filter(contact=contact)
    if before is not None:
        events = events.filter(created_at__lte=before)
    entries = []
    for event in events.order_by("-created_at", "-id")[:limit]:
        detail = event.source
        if event.error_code:
            detail += f" · {event.error_code}"
        entries.append(
            TimelineEntry(
                at=event.created_at,
                kind="event",
                key=str(event.pk),
                title=event.event,
                status=event.status,
                detail=detail,
                url=admin_change_url(event),
            )
        )
    return entries
