"""What the work-queue kit does when PostgreSQL refuses the COMMIT of a batch's
transaction: its rows are handed back at once as failed attempts (retried after the
backoff, dead-lettered once out of attempts), not left `processing` until their lease
runs out. The refusals are real ones of the server at COMMIT (tests/config/commit_refusal.py)."""

import datetime as dt
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from config.workqueue.errors import WorkError
from config.workqueue.models import WorkStatus
from events.models import Event
from tests.config.commit_refusal import (
    CHECK_VIOLATION,
    DEADLOCK,
    SERIALIZATION_FAILURE,
    TERMINATE,
    CommitRefusal,
    commit_refusal,
)
from tests.config.test_workqueue import (
    POLICY,
    CountingWork,
    FinishedWork,
    claim_and_run,
    make_queue,
    make_rows,
    runs_of,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def refusal() -> Iterator[CommitRefusal]:
    with commit_refusal("events_event") as refusal:
        yield refusal


def state(row: Event) -> tuple[Any, ...]:
    row.refresh_from_db()
    return (row.status, row.attempts, row.error_code, row.claim_token, row.lease_expires_at)


def assert_retried_after_the_first_backoff(row: Event, now: dt.datetime) -> None:
    # The policy's first backoff: between half and all of its base (2 s).
    assert now + dt.timedelta(seconds=1) <= row.next_attempt_at <= now + dt.timedelta(seconds=2)


@pytest.mark.parametrize(
    ("relock", "error"),
    [
        (True, SERIALIZATION_FAILURE),
        (True, DEADLOCK),
        (True, CHECK_VIOLATION),
        (True, TERMINATE),
        (False, SERIALIZATION_FAILURE),
        (False, TERMINATE),
    ],
)
def test_a_batch_whose_commit_fails_is_handed_back_at_once_for_a_retry(
    clock, refusal, broker, relock, error
):
    rows = make_rows(clock, 3)
    refusal.refuse([rows[1].pk], error=error)
    queue = make_queue(relock=relock)
    work = CountingWork()

    outcome = claim_and_run(queue, work)

    assert (outcome.processed, outcome.failed, outcome.dead_lettered) == ([], 3, 0)
    assert sorted(work.dropped_ids) == sorted(row.pk for row in rows)
    for row in rows:
        assert state(row) == (WorkStatus.FAILED, 1, "commit_failed", None, None)
        assert_retried_after_the_first_backoff(row, clock.current)
        # Nothing of the batch was kept.
        assert row.external_id is None
        assert runs_of(row) == 0
    [message] = {row.last_error for row in rows}
    assert message.startswith("CommitFailed: ")
    assert ("terminating connection" if error == TERMINATE else "refused at commit") in message
    assert outcome.next_retry_at == min(row.next_attempt_at for row in rows)
    # A wake-up for when the retries are due.
    assert [message["eta"] is not None for message in broker()] == [True]

    # Not claimable before the backoff; then a later batch does them once.
    assert queue.claim(limit=1)[1] == []
    refusal.allow()
    clock.advance(seconds=2)
    outcome = claim_and_run(queue, CountingWork())
    assert sorted(outcome.processed) == sorted(row.pk for row in rows)
    for row in rows:
        assert state(row) == (WorkStatus.PROCESSED, 2, "", None, None)
        assert runs_of(row) == 1


def test_a_batch_whose_commit_keeps_failing_dead_letters_when_its_attempts_run_out(clock, refusal):
    [row] = make_rows(clock, 1)
    refusal.refuse([row.pk], error=DEADLOCK)
    queue = make_queue()
    for attempt in range(1, POLICY.max_attempts + 1):
        outcome = claim_and_run(queue, CountingWork())
        row.refresh_from_db()
        assert row.attempts == attempt
        if attempt < POLICY.max_attempts:
            assert (outcome.failed, row.status) == (1, WorkStatus.FAILED)
            clock.set(row.next_attempt_at)
    assert (outcome.failed, outcome.dead_lettered) == (0, 1)
    assert state(row) == (WorkStatus.DEAD_LETTERED, 3, "commit_failed", None, None)
    assert row.next_attempt_at is None
    assert row.last_error.startswith("CommitFailed: ")
    clock.advance(days=1)
    assert queue.claim()[1] == []


def test_items_that_failed_in_the_batch_keep_their_own_outcome_when_its_commit_fails(
    clock, refusal
):
    """The batch's failure marks were rolled back with it: each is made again as it was
    (a permanent error dead-letters at once, a row out of attempts is dead-lettered as
    lost without being dropped), and only the items that were done fail with the commit."""
    rejected, done, refused = make_rows(clock, 3)
    [lost] = make_rows(clock, 1, attempts=POLICY.max_attempts)
    refusal.refuse([refused.pk])
    work = CountingWork(
        fail=lambda item: WorkError("rejected", permanent=True) if item.pk == rejected.pk else None
    )

    outcome = claim_and_run(make_queue(), work)

    assert (outcome.processed, outcome.failed, outcome.dead_lettered) == ([], 2, 2)
    assert state(rejected) == (WorkStatus.DEAD_LETTERED, 1, "work_error", None, None)
    assert state(lost)[:3] == (WorkStatus.DEAD_LETTERED, POLICY.max_attempts + 1, "worker_lost")
    for row in (done, refused):
        assert state(row) == (WorkStatus.FAILED, 1, "commit_failed", None, None)
    # Dropped in the batch (the rejected one, run item by item) and again at the hand-back.
    assert Counter(work.dropped_ids) == {rejected.pk: 2, done.pk: 1, refused.pk: 1}


def test_a_row_taken_over_before_the_hand_back_is_left_to_its_new_holder(clock, refusal):
    """The lease ran out while the batch was worked: once the refused commit released the
    rows, another worker takes them over before the hand-back locks them, and the hand-back
    finds them no longer held."""
    rows = make_rows(clock, 2)
    refusal.refuse([rows[0].pk])
    queue = make_queue()
    taken: list[tuple[uuid.UUID, list[Event]]] = []

    def other_worker() -> None:
        try:
            taken.append(queue.claim())
        finally:
            connection.close()

    def take_over_first(execute: Any, sql: str, *args: Any) -> Any:
        # The hand-back's lock of the rows: the first lock after the batch's re-lock.
        if finished and "FOR UPDATE" in sql and not taken:
            thread = threading.Thread(target=other_worker)
            thread.start()
            thread.join()
        return execute(sql, *args)

    class Slow(CountingWork):
        def finish(self, items: list[Event]) -> None:
            nonlocal finished
            clock.advance(seconds=61)
            finished = True

    finished = False
    token, items = queue.claim()
    with connection.execute_wrapper(take_over_first):
        outcome = queue.run(token=token, items=items, work=Slow())

    [(other_token, others)] = taken
    assert sorted(item.pk for item in others) == sorted(row.pk for row in rows)
    assert (outcome.processed, outcome.failed, outcome.skipped) == ([], 0, 2)
    for row in rows:
        assert state(row) == (
            WorkStatus.PROCESSING,
            2,
            "worker_lost",
            other_token,
            clock.current + dt.timedelta(seconds=60),
        )


def test_a_refused_complete_hands_its_rows_back_too(clock, refusal):
    rows = make_rows(clock, 2)
    refusal.refuse([rows[0].pk])
    queue = make_queue()
    token, items = queue.claim()

    outcome = queue.complete(token=token, items=items, work=FinishedWork())

    assert (outcome.processed, outcome.failed) == ([], 2)
    for row in rows:
        assert state(row) == (WorkStatus.FAILED, 1, "commit_failed", None, None)
        assert row.email is None, "what `finish` wrote was rolled back"


def test_a_drain_goes_on_past_a_refused_batch_and_a_later_one_finishes_it(clock, refusal):
    rows = make_rows(clock, 4)
    refusal.refuse([rows[0].pk])
    queue = make_queue(batch_size=2)
    work = CountingWork()

    assert queue.drain(lambda: claim_and_run(queue, work).claimed, budget_seconds=60) == (4, False)
    statuses = [state(row)[0] for row in rows]
    assert statuses == [WorkStatus.FAILED] * 2 + [WorkStatus.PROCESSED] * 2

    refusal.allow()
    clock.advance(seconds=2)
    assert queue.drain(lambda: claim_and_run(queue, work).claimed, budget_seconds=60) == (2, False)
    assert {state(row)[0] for row in rows} == {WorkStatus.PROCESSED}
    assert [runs_of(row) for row in rows] == [1, 1, 1, 1]


def test_when_the_hand_back_is_refused_too_the_commit_s_error_goes_on_and_the_lease_hands_on(
    clock, refusal
):
    [row] = make_rows(clock, 1)
    refusal.refuse([row.pk], statuses=["processed", "failed"])
    queue = make_queue()
    token, items = queue.claim()

    with pytest.raises(DatabaseError, match="refused at commit"):
        queue.run(token=token, items=items, work=CountingWork())

    assert state(row) == (
        WorkStatus.PROCESSING,
        1,
        "",
        token,
        clock.current + dt.timedelta(seconds=60),
    )
    refusal.allow()
    clock.advance(seconds=61)
    outcome = claim_and_run(queue, CountingWork())
    assert outcome.processed == [row.pk]
    assert state(row)[:2] == (WorkStatus.PROCESSED, 2)


def test_an_error_of_an_on_commit_callback_is_not_taken_for_a_failed_commit(clock):
    """The commit held: the rows are done, and what the callback raised goes on."""
    [row] = make_rows(clock, 1)

    def announce() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT no_such_column FROM events_event")

    class Announcing(CountingWork):
        def finish(self, items: list[Event]) -> None:
            transaction.on_commit(announce)

    with pytest.raises(DatabaseError):
        claim_and_run(make_queue(), Announcing())
    assert state(row)[:3] == (WorkStatus.PROCESSED, 1, "")
