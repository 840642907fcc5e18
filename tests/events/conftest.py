"""Helpers of the events tests: handlers registered for one test, and running the worker
steps in-process with the test clock."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from events.hooks import register_event_handler, unregister_event_handler
from events.services.processing import events_process_due
from events.wake import events_wake_rearm


@pytest.fixture(autouse=True)
def _wake_rearmed() -> None:
    """Each test starts with the wake-up signal armed, in this process too."""
    events_wake_rearm()


@pytest.fixture
def handler() -> Iterator[Callable[[Any], Any]]:
    """Registers handlers for the test only."""
    registered: list[Any] = []

    def register(fn: Any) -> Any:
        register_event_handler(fn)
        registered.append(fn)
        return fn

    yield register
    for fn in registered:
        unregister_event_handler(fn)


def drain() -> int:
    """What a woken worker does: process every due event now."""
    claimed, more = events_process_due(budget_seconds=30)
    assert not more
    return claimed
