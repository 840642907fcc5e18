"""A real Celery worker on the events queue, for tests that kill workers or the broker.

Started as a subprocess with the test settings and the test database. With
EVENTS_TEST_BLOCK_MARKER set, a handler writes that file and then blocks, so the test
knows the worker has claimed an event and is inside its processing transaction; with
EVENTS_TEST_BLOCK_ONCE set too, only while that file does not exist yet (a retry goes
through). EVENTS_TEST_WORKER_POOL names the pool (solo unless set: the prefork pool is the
one that enforces time limits).
"""

import os
import pathlib
import time
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django

django.setup()

from config.celery import app  # noqa: E402
from events.hooks import register_event_handler  # noqa: E402

MARKER = os.environ.get("EVENTS_TEST_BLOCK_MARKER")


ONCE = bool(os.environ.get("EVENTS_TEST_BLOCK_ONCE"))
POOL = os.environ.get("EVENTS_TEST_WORKER_POOL", "solo")


def block(*, event: Any, contact: Any) -> None:
    marker = pathlib.Path(str(MARKER))
    if ONCE and marker.exists():
        return
    marker.write_text(str(event.id))
    time.sleep(600)


if __name__ == "__main__":
    if MARKER:
        register_event_handler(block)
    app.worker_main(
        [
            "worker",
            "-Q",
            "events",
            f"--pool={POOL}",
            "--concurrency=1",
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
            f"--hostname=events-test-{os.getpid()}@localhost",
        ]
    )
