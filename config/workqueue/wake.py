"""The cheap signal that wakes the workers after work is committed.

The table is the queue; this only shortens the wait. At most one wake-up task is
published per debounce interval across all web processes (a Redis SET NX with a TTL),
each process also skips the question for LOCAL_DEBOUNCE_SECONDS after asking, a worker
re-arms the signal when it runs dry, and a beat sweep covers anything a lost signal or
an unreachable broker leaves behind.

Tasks are published by name (`send_task`), so waking needs no import of a tasks module.
"""

import logging
import threading
import time
from typing import Any

from django.core.cache import cache

from config.celery import app

logger = logging.getLogger(__name__)

LOCAL_DEBOUNCE_SECONDS = 0.25
# Publishing must fail fast when the broker is away: the pooled connection would retry
# for seconds while a client waits for its answer. One connection per thread, no retries.
PUBLISH_CONNECT_TIMEOUT = 1.0

# This process's own debounce per signal, in front of the shared one: a cache round trip
# costs more than the rest of the wake-up decision, and ingest asks once per request.
_local_next_check: dict[str, float] = {}
_local = threading.local()


def wake(*, task: str, key: str, debounce_seconds: float) -> None:
    """Publishes `task` unless a wake-up under `key` went out in the last interval."""
    now = time.monotonic()
    if now < _local_next_check.get(key, 0.0):
        return
    _local_next_check[key] = now + LOCAL_DEBOUNCE_SECONDS
    try:
        if not cache.add(key, 1, debounce_seconds):
            return
    except Exception:
        logger.warning("Wake-up of %s skipped: the cache is unreachable", task, exc_info=True)
        return
    # A failed publish keeps the debounce key: during a broker outage one request per
    # interval pays for the failed attempt, not every request.
    publish(task)


def rearm(*, key: str) -> None:
    """Lets the next commit publish a wake-up again (a worker calls it when it runs dry).
    A web process that checked within the last LOCAL_DEBOUNCE_SECONDS waits that long."""
    _local_next_check.pop(key, None)
    try:
        cache.delete(key)
    except Exception:
        logger.warning("Wake-up re-arm of %s failed: the cache is unreachable", key, exc_info=True)


def publish(task: str, *, countdown: float | None = None) -> bool:
    """Sends `task` (no arguments) by name on this thread's broker connection, once."""
    connection = _connection()
    try:
        app.send_task(
            task,
            countdown=None if countdown is None else max(countdown, 0.0),
            connection=connection,
            retry=False,
            ignore_result=True,
        )
    except Exception:
        logger.warning("Wake-up %s not published: the broker is unreachable", task, exc_info=True)
        _local.connection = None
        _release(connection)
        return False
    return True


def reset() -> None:
    """Drops this thread's broker connection, e.g. after the broker address changed."""
    connection = getattr(_local, "connection", None)
    _local.connection = None
    if connection is not None:
        _release(connection)


def _connection() -> Any:
    connection = getattr(_local, "connection", None)
    if connection is None:
        connection = app.connection_for_write(
            transport_options={"max_retries": 0}, connect_timeout=PUBLISH_CONNECT_TIMEOUT
        )
        _local.connection = connection
    return connection


def _release(connection: Any) -> None:
    try:
        connection.release()
    except Exception:
        logger.debug("Closing the broker connection failed", exc_info=True)
