"""The cheap signal that wakes the workers after events are committed.

The events table is the queue; this only shortens the wait. At most one wake-up task is
published per debounce interval across all web processes (a Redis SET NX with a TTL), a
worker re-arms the signal when it runs dry, and the beat sweep covers anything a lost
signal or an unreachable broker leaves behind.
"""

import logging

from django.core.cache import cache

from events.conf import wake_debounce_seconds

logger = logging.getLogger(__name__)

WAKE_KEY = "events:wake"


def events_wake() -> None:
    """Publishes `events.process_batch` unless one was published in the last interval."""
    try:
        if not cache.add(WAKE_KEY, 1, wake_debounce_seconds()):
            return
    except Exception:
        logger.warning("Event wake-up skipped: the cache is unreachable", exc_info=True)
        return
    if not _publish(countdown=None):
        # Let the next commit try again rather than waiting out the interval.
        events_wake_rearm()


def events_wake_later(*, countdown: float) -> None:
    """A wake-up after `countdown` seconds, for retries that become due then."""
    _publish(countdown=max(countdown, 0.0))


def events_wake_rearm() -> None:
    """Lets the next commit publish a wake-up again (a worker calls it when it runs dry)."""
    try:
        cache.delete(WAKE_KEY)
    except Exception:
        logger.warning("Event wake-up re-arm failed: the cache is unreachable", exc_info=True)


def _publish(*, countdown: float | None) -> bool:
    from events.tasks import process_batch

    try:
        # No publish retries: a broker outage must not slow ingest; the sweep catches up.
        process_batch.apply_async(countdown=countdown, retry=False)
    except Exception:
        logger.warning("Event wake-up not published: the broker is unreachable", exc_info=True)
        return False
    return True
