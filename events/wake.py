"""The cheap signal that wakes the event workers after events are committed: the
work-queue kit's debounced wake-up (config/workqueue/wake.py) for `events.process_batch`.
"""

from config.workqueue import wake
from events.queue import EVENT_QUEUE


def events_wake() -> None:
    """Publishes `events.process_batch` unless one was published in the last interval."""
    EVENT_QUEUE.wake()


def events_wake_later(*, countdown: float) -> None:
    """A wake-up after `countdown` seconds, for retries that become due then."""
    EVENT_QUEUE.wake_later(countdown=countdown)


def events_wake_rearm() -> None:
    """Lets the next commit publish a wake-up again (a worker calls it when it runs dry)."""
    EVENT_QUEUE.rearm()


def events_wake_reset() -> None:
    """Drops this thread's broker connection, e.g. after the broker address changed."""
    wake.reset()
