"""What the work-queue kit does when a task's soft time limit runs out mid-drain: the rows
the batch under way holds become failed attempts, retried by the queue's policy.

Here the limit is raised where Celery's worker raises it (inside the running work, or
between two steps of a batch) without a worker; tests/events/test_worker.py runs a real
prefork worker past its soft limit."""

import datetime as dt

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from config.workqueue.models import WorkStatus
from events.models import Event
from tests.config.test_workqueue import POLICY, CountingWork, make_queue, make_rows, runs_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_batch_stopped_by_the_soft_time_limit_hands_its_rows_back_as_failed_attempts(clock):
    rows = make_rows(clock, 5)
    queue = make_queue(batch_size=3)
    stop_at = rows[3].pk
    work = CountingWork(fail=lambda item: SoftTimeLimitExceeded() if item.pk == stop_at else None)

    def batch() -> int:
        token, items = queue.claim()
        queue.run(token=token, items=items, work=work)
        return len(items)

    with pytest.raises(SoftTimeLimitExceeded):
        queue.drain(batch, budget_seconds=60)

    done, stopped = rows[:3], rows[3:]
    for row in done:
        row.refresh_from_db()
        assert (row.status, row.attempts, runs_of(row)) == (WorkStatus.PROCESSED, 1, 1)
    for row in stopped:
        row.refresh_from_db()
        assert row.status == WorkStatus.FAILED
        assert row.error_code == "time_limit"
        assert row.attempts == 1
        assert row.claim_token is None
        assert row.lease_expires_at is None
        # The policy's first backoff: between half and all of its base.
        assert (
            clock.current + dt.timedelta(seconds=1)
            <= row.next_attempt_at
            <= clock.current + dt.timedelta(seconds=2)
        )
        assert runs_of(row) == 0, "what the stopped batch wrote was rolled back"

    # Due again after the backoff, they are worked as any retry is.
    clock.advance(seconds=3)
    token, items = queue.claim()
    queue.run(token=token, items=items, work=CountingWork())
    assert set(Event.objects.filter(status=WorkStatus.PROCESSED).values_list("pk", flat=True)) == {
        row.pk for row in rows
    }


def test_rows_of_the_claim_already_recorded_are_left_as_they_are(clock):
    rows = make_rows(clock, 3)
    queue = make_queue()

    def batch() -> int:
        token, items = queue.claim()
        # A family that records part of its claim (push records accepted sends as it goes)
        # and is stopped before the rest.
        queue.run(token=token, items=items[:1], work=CountingWork())
        raise SoftTimeLimitExceeded()

    with pytest.raises(SoftTimeLimitExceeded):
        queue.drain(batch, budget_seconds=60)

    statuses = dict(Event.objects.values_list("pk", "status"))
    assert statuses == {
        rows[0].pk: WorkStatus.PROCESSED,
        rows[1].pk: WorkStatus.FAILED,
        rows[2].pk: WorkStatus.FAILED,
    }


def test_a_row_out_of_attempts_when_its_batch_is_stopped_is_dead_lettered(clock):
    [row] = make_rows(clock, 1, attempts=POLICY.max_attempts - 1)
    queue = make_queue()

    def batch() -> int:
        queue.claim()
        raise SoftTimeLimitExceeded()

    with pytest.raises(SoftTimeLimitExceeded):
        queue.drain(batch, budget_seconds=60)

    row.refresh_from_db()
    assert (row.status, row.attempts, row.error_code) == (
        WorkStatus.DEAD_LETTERED,
        POLICY.max_attempts,
        "time_limit",
    )
    assert row.next_attempt_at is None


def test_a_drain_that_ends_in_time_hands_nothing_back(clock):
    rows = make_rows(clock, 2)
    queue = make_queue()

    def batch() -> int:
        token, items = queue.claim()
        queue.run(token=token, items=items, work=CountingWork())
        return len(items)

    assert queue.drain(batch, budget_seconds=60) == (2, False)
    assert {Event.objects.get(pk=row.pk).status for row in rows} == {WorkStatus.PROCESSED}
