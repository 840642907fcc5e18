"""The cheap signal that wakes the workers after work is committed.

The table is the queue; this only shortens the wait. At most one wake-up task is
published per debounce interval across all processes (a Redis SET NX with a TTL), each
process also skips the question for LOCAL_DEBOUNCE_SECONDS after asking, a worker
re-arms the signal when it runs dry, and a beat sweep covers anything a lost signal or
an unreachable broker leaves behind.

The question and the publish run on one thread per process, never on the thread that
committed: a request that accepted work answers without waiting on Redis or the broker
(a thread's first publish sets up a broker connection, 50 ms of CPU or more, and either
server may stall). Tasks are published by name (`send_task`), so waking needs no import
of a tasks module.
"""

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from django.core.cache import cache

from config.celery import app
from config.observability.requestcontext import current_request_id, request_id_bound

logger = logging.getLogger(__name__)

LOCAL_DEBOUNCE_SECONDS = 0.25
# Publishing must fail fast when the broker is away: the pooled connection would retry
# for seconds. One connection per thread, no retries.
PUBLISH_CONNECT_TIMEOUT = 1.0

# This process's own debounce per signal, in front of the shared one: even handing the
# question to the waker thread costs more than skipping it, and ingest asks per request.
_local_next_check: dict[str, float] = {}
_local = threading.local()
# Bumped by `reset`: every thread drops its broker connection before its next publish.
_generation = 0


class _Waker:
    """The thread that asks the shared debounce and publishes, one per process."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        # Also after a fork: the parent's thread does not exist in the child, and its
        # lock may have been held by another thread at the moment of the fork.
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._signal = threading.Event()
        self._wanted: dict[str, tuple[str, float, str | None]] = {}
        self._submitted = 0
        self._handled = 0
        self._connect = False
        self._thread: threading.Thread | None = None

    def submit(self, *, task: str, key: str, debounce_seconds: float) -> None:
        with self._lock:
            # The wake-up goes out on another thread: it carries the request id of the
            # latest request that asked for it.
            self._wanted[key] = (task, debounce_seconds, current_request_id())
            self._submitted += 1
            self._start()
        self._signal.set()

    def prepare(self) -> None:
        with self._lock:
            self._connect = True
            self._start()
        self._signal.set()

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="workqueue-wake", daemon=True)
            self._thread.start()

    def flush(self, timeout: float) -> bool:
        """Waits until everything submitted so far was handled; False on timeout."""
        with self._lock:
            target = self._submitted
            return self._done.wait_for(lambda: self._handled >= target, timeout)

    def _run(self) -> None:
        while True:
            self._signal.wait()
            self._signal.clear()
            with self._lock:
                wanted, self._wanted = self._wanted, {}
                submitted = self._submitted
                connect, self._connect = self._connect, False
            if connect:
                try:
                    _connection().default_channel  # noqa: B018 (connecting is the point)
                except Exception:
                    logger.warning("The broker is unreachable; wake-ups wait for it", exc_info=True)
            for key, (task, debounce_seconds, request_id) in wanted.items():
                try:
                    with request_id_bound(request_id):
                        _wake_now(task=task, key=key, debounce_seconds=debounce_seconds)
                except Exception:
                    logger.exception("Wake-up of %s failed", task)
            with self._lock:
                self._handled = submitted
                self._done.notify_all()


_waker = _Waker()


def wake(*, task: str, key: str, debounce_seconds: float | Callable[[], float]) -> None:
    """Publishes `task` soon, unless a wake-up under `key` went out in the last interval.
    Returns at once: the waker thread asks the cache and publishes. `debounce_seconds` may
    be a setting's reader, read only when a wake-up is submitted: most calls end at the
    local check, and reading the setting cost more than it."""
    now = time.monotonic()
    if now < _local_next_check.get(key, 0.0):
        return
    _local_next_check[key] = now + LOCAL_DEBOUNCE_SECONDS
    interval = debounce_seconds() if callable(debounce_seconds) else debounce_seconds
    _waker.submit(task=task, key=key, debounce_seconds=interval)


def prepare() -> None:
    """Loads the broker transport now and has the waker thread connect, so the first
    wake-up of a server process costs what every other one does."""
    app.amqp.router  # noqa: B018 (loading it is the point)
    connection = app.connection_for_write()
    connection.transport  # noqa: B018 (loading it is the point)
    _release(connection)
    _waker.prepare()


def flush(timeout: float = 5.0) -> bool:
    """Waits until the wake-ups asked for so far went out (or were debounced)."""
    return _waker.flush(timeout)


def _wake_now(*, task: str, key: str, debounce_seconds: float) -> None:
    try:
        if not cache.add(key, 1, debounce_seconds):
            return
    except Exception:
        logger.warning("Wake-up of %s skipped: the cache is unreachable", task, exc_info=True)
        return
    # A failed publish keeps the debounce key: during a broker outage one attempt per
    # interval fails, not one per commit.
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
    """Makes every thread open a new broker connection, e.g. after the broker address
    changed; this thread's is closed now."""
    global _generation
    _generation += 1
    connection = getattr(_local, "connection", None)
    _local.connection = None
    if connection is not None:
        _release(connection)


def _connection() -> Any:
    connection = getattr(_local, "connection", None)
    if connection is not None and getattr(_local, "generation", None) != _generation:
        _release(connection)
        connection = None
    if connection is None:
        connection = app.connection_for_write(
            transport_options={"max_retries": 0}, connect_timeout=PUBLISH_CONNECT_TIMEOUT
        )
        _local.connection = connection
        _local.generation = _generation
    return connection


def _release(connection: Any) -> None:
    try:
        connection.release()
    except Exception:
        logger.debug("Closing the broker connection failed", exc_info=True)
