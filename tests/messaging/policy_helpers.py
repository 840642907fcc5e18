"""Reading what frequency caps have counted, and racing two transactions for a contact's
last slot, for the delivery policy tests."""

import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connection, connections

from messaging.models import ContactSends


def counted_sends() -> int:
    """Messages counted against caps, over every contact and channel."""
    return sum(len(row.email) + len(row.push) for row in ContactSends.objects.all())


def _blocked_on_a_lock() -> bool:
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        )
        return bool(cursor.fetchone()[0])


def race(take: Callable[[Callable[[], None]], Any]) -> tuple[Any, Any, bool]:
    """Runs `take(pause)` in two threads, each on its own connection: the first calls
    `pause()` once it has read the caps (holding what it locked, its transaction open)
    and goes on only when the second, started then, waits on a lock or is done. Returns
    both results and whether the second waited."""
    paused, release, done = threading.Event(), threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    def pause() -> None:
        paused.set()
        assert release.wait(30)

    def run(name: str, work: Callable[[], Any]) -> threading.Thread:
        def target() -> None:
            try:
                results[name] = work()
            except BaseException as error:
                results[name] = error
            finally:
                connection.close()
                if name == "second":
                    done.set()

        thread = threading.Thread(target=target)
        thread.start()
        return thread

    first = run("first", lambda: take(pause))
    assert paused.wait(30)
    second = run("second", lambda: take(lambda: None))
    waited = False
    deadline = time.monotonic() + 30
    while not done.is_set() and time.monotonic() < deadline:
        if _blocked_on_a_lock():
            waited = True
            break
        time.sleep(0.01)
    release.set()
    first.join(60)
    second.join(60)
    for outcome in results.values():
        if isinstance(outcome, BaseException):
            raise outcome
    return results["first"], results["second"], waited
