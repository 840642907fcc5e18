"""Fixtures of the work-queue kit's tests: the broker's messages of the test queue's task."""

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from django.conf import settings

from config.workqueue import wake

TASK = "tests.workqueue.drain"
WAKE_KEY = "tests:workqueue:wake"


@pytest.fixture
def broker() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The messages published under TASK, read off the broker's default queue."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    wake.rearm(key=WAKE_KEY)

    def published() -> list[dict[str, Any]]:
        # Kombu pushes on the left and pops on the right: oldest last.
        messages = [json.loads(raw) for raw in reversed(client.lrange("default", 0, -1))]
        return [
            {**message["headers"], "body": json.loads(base64.b64decode(message["body"]))}
            for message in messages
            if message["headers"].get("task") == TASK
        ]

    def clear() -> None:
        for raw in client.lrange("default", 0, -1):
            if json.loads(raw)["headers"].get("task") == TASK:
                client.lrem("default", 0, raw)

    clear()
    yield published
    clear()
    client.close()
