"""The dead-letter queue: events whose retries ran out, until staff requeue them."""

from collections.abc import Iterable
from typing import Any

from events.queue import EVENT_QUEUE


def events_requeue(*, ids: Iterable[Any]) -> int:
    """Gives dead-lettered events a fresh set of attempts; others are left alone.
    The last error stays on the row until an attempt succeeds."""
    return EVENT_QUEUE.requeue(ids=ids)
