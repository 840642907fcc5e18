"""The dead-letter queue: events whose retries ran out, until staff requeue them."""

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from config import clock
from events.models import Event, EventStatus
from events.wake import events_wake


def events_requeue(*, ids: Iterable[Any]) -> int:
    """Gives dead-lettered events a fresh set of attempts; others are left alone.
    The last error stays on the row until an attempt succeeds."""
    now = clock.now()
    with transaction.atomic():
        count = Event.objects.filter(id__in=list(ids), status=EventStatus.DEAD_LETTERED).update(
            status=EventStatus.ACCEPTED, attempts=0, next_attempt_at=now
        )
        if count:
            transaction.on_commit(events_wake)
    return count
