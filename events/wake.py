"""The cheap signal that wakes the workers after events are committed.

The events table is the queue; this only shortens the wait. At most one wake-up task is
published per debounce interval across all web processes (a Redis SET NX with a TTL), a
worker re-arms the signal when it runs dry, and the beat sweep covers anything a lost
signal or an unreachable broker leaves behind.
"""

import logging
import threading
import time
from typing import Any

from django.core.cache import cache

from events.conf import wake_debounce_seconds

logger = logging.getLogger(__name__)

WAKE_KEY = "events:wake"
LOCAL_DEBOUNCE_SECONDS = 0.25


# This process's own debounce, in front of the shared one: a cache round trip costs more
# than the rest of the wake-up decision, and ingest calls this once per request.
_local_next_check = 0.0


def events_wake() -> None:
    """Publishes `events.process_batch` unless one was published in the last interval."""
    global _local_next_check
    now = time.monotonic()
    if now < _local_next_check:
        return
    _local_next_check = now + LOCAL_DEBOUNCE_SECONDS
    try:
        if not cache.add(WAKE_KEY, 1, wake_debounce_seconds()):
            return
    except Exception:
        logger.warning("Event wake-up skipped: the cache is unreachable", exc_info=True)
        return
    # A failed publish keeps the debounce key: during a broker outage one request per
    # interval pays for the failed attempt, not every request.
    _publish(countdown=None)


def events_wake_later(*, countdown: float) -> None:
    """A wake-up after `countdown` seconds, for retries that become due then."""
    _publish(countdown=max(countdown, 0.0))


def events_wake_rearm() -> None:
    """Lets the next commit publish a wake-up again (a worker calls it when it runs dry).
    A web process that checked within the last LOCAL_DEBOUNCE_SECONDS waits that long."""
    global _local_next_check
    _local_next_check = 0.0
    try:
        cache.delete(WAKE_KEY)
    except Exception:
        logger.warning("Event wake-up re-arm failed: the cache is unreachable", exc_info=True)


# Publishing must fail fast when the broker is away: the pooled connection would retry
# for seconds while a client waits for its 202. One connection per thread, no retries.
PUBLISH_CONNECT_TIMEOUT = 1.0
_local = threading.local()


def _connection() -> Any:
    connection = getattr(_local, "connection", None)
    if connection is None:
        from config.celery import app

        connection = app.connection_for_write(
            transport_options={"max_retries": 0}, connect_timeout=PUBLISH_CONNECT_TIMEOUT
        )
        _local.connection = connection
    return connection


def _publish(*, countdown: float | None) -> bool:
    from events.tasks import process_batch

    connection = _connection()
    try:
        process_batch.apply_async(countdown=countdown, retry=False, connection=connection)
    except Exception:
        logger.warning("Event wake-up not published: the broker is unreachable", exc_info=True)
        _local.connection = None
        try:
            connection.release()
        except Exception:
            logger.debug("Closing the failed broker connection failed", exc_info=True)
        return False
    return True


def events_wake_reset() -> None:
    """Drops this thread's broker connection, e.g. after the broker address changed."""
    connection = getattr(_local, "connection", None)
    _local.connection = None
    if connection is not None:
        try:
            connection.release()
        except Exception:
            logger.debug("Closing the broker connection failed", exc_info=True)
