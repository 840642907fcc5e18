"""A real Celery worker on the events queue, for tests that kill workers or the broker.

Started as a subprocess with the test settings and the test database. With
EVENTS_TEST_BLOCK_MARKER set, a handler writes that file and then blocks, so the test
knows the worker has claimed an event and is inside its processing transaction.
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


def block(*, event: Any, contact: Any) -> None:
    pathlib.Path(str(MARKER)).write_text(str(event.id))
    time.sleep(600)


if __name__ == "__main__":
    if MARKER:
        register_event_handler(block)
    app.worker_main(
        [
            "worker",
            "-Q",
            "events",
            "--pool=solo",
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
            f"--hostname=events-test-{os.getpid()}@localhost",
        ]
    )
