"""The work-queue kit on its own: a queue over the events table with work of the test's
making, against the real database and broker, on the controllable clock."""

import datetime as dt
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.celery import app as celery_app
from config.workqueue import wake
from config.workqueue.errors import WorkError
from config.workqueue.models import WorkStatus
from config.workqueue.policy import RetryPolicy, retry_policy_for
from config.workqueue.queue import WorkQueue
from config.workqueue.work import BatchOutcome, BatchWork, PerItem
from events.models import Event
from tests.config.conftest import TASK, WAKE_KEY
from tests.factories import ProjectFactory

POLICY = RetryPolicy(base_seconds=2, factor=2, cap_seconds=30, max_attempts=3)


def make_queue(**overrides: Any) -> WorkQueue[Event]:
    options: dict[str, Any] = {
        "model": Event,
        "task": TASK,
        "wake_key": WAKE_KEY,
        "retry_policy": lambda item: POLICY,
        "batch_size": 10,
        "lease_seconds": 60,
        "settle_seconds": 0,
        "order_by": ("next_attempt_at", "created_at"),
    }
    return WorkQueue(**{**options, **overrides})


def make_rows(clock: Any, count: int, **extra: Any) -> list[Event]:
    project = ProjectFactory()
    return Event.objects.bulk_create(
        [
            Event(
                project=project,
                event="work.item",
                payload={"n": n},
                occurred_at=clock.current,
                # Due in the order made, so a claim of some takes the first ones
                # whatever order the table's pages hold them in.
                next_attempt_at=clock.current - dt.timedelta(microseconds=count - n),
                created_at=clock.current + dt.timedelta(microseconds=n),
                **extra,
            )
            for n in range(count)
        ]
    )


def runs_of(row: Event) -> int:
    return int(Event.objects.values_list("payload", flat=True).get(pk=row.pk).get("runs", 0))


class CountingWork(BatchWork[Event]):
    """Counts each run on the row itself, in the batch's transaction; fails on request."""

    def __init__(self, fail: Callable[[Event], Exception | None] = lambda item: None) -> None:
        self.fail = fail
        self.kept_ids: list[uuid.UUID] = []
        self.dropped_ids: list[uuid.UUID] = []

    def run(self, item: Event) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE events_event SET payload = jsonb_set(payload, '{runs}', "
                "to_jsonb(COALESCE((payload->>'runs')::int, 0) + 1)) WHERE id = %s",
                [item.pk],
            )
        error = self.fail(item)
        if error is not None:
            raise error

    def kept(self, item: Event) -> None:
        self.kept_ids.append(item.pk)

    def dropped(self, item: Event) -> None:
        self.dropped_ids.append(item.pk)

    def done_values(self, items: list[Event]) -> dict[str, Any]:
        return {"external_id": PerItem({item.pk: f"done-{item.payload['n']}" for item in items})}


def claim_and_run(queue: WorkQueue[Event], work: BatchWork[Event]) -> BatchOutcome:
    token, items = queue.claim()
    return queue.run(token=token, items=items, work=work)


# --- claims ---


@pytest.mark.django_db(transaction=True)
def test_workers_racing_for_the_same_rows_claim_each_row_once(clock):
    rows = make_rows(clock, 240)
    # A third of them belong to workers that died: their leases ran out a while ago.
    Event.objects.filter(pk__in=[row.pk for row in rows[::3]]).update(
        status=WorkStatus.PROCESSING,
        attempts=1,
        claim_token=uuid.uuid4(),
        lease_expires_at=clock.current - dt.timedelta(seconds=1),
    )
    queue = make_queue(batch_size=7)
    start = threading.Barrier(6)
    claims: list[list[uuid.UUID]] = [[] for _ in range(6)]

    def worker(mine: list[uuid.UUID]) -> None:
        try:
            start.wait()
            while True:
                _, items = queue.claim()
                if not items:
                    return
                mine.extend(item.pk for item in items)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(claims[i],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    claimed = Counter(pk for mine in claims for pk in mine)
    assert set(claimed) == {row.pk for row in rows}
    assert set(claimed.values()) == {1}
    assert sum(1 for mine in claims if mine) > 1, "the workers shared the rows"
    states = Counter(Event.objects.values_list("status", "attempts"))
    assert states == {(WorkStatus.PROCESSING, 1): 160, (WorkStatus.PROCESSING, 2): 80}


@pytest.mark.django_db(transaction=True)
def test_workers_running_the_same_queue_work_each_row_once(clock):
    rows = make_rows(clock, 150)
    queue = make_queue(batch_size=8)
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            start.wait()
            queue.drain(lambda: claim_and_run(queue, CountingWork()).claimed, budget_seconds=60)
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert Counter(Event.objects.values_list("status", flat=True)) == {WorkStatus.PROCESSED: 150}
    assert {runs_of(row) for row in rows} == {1}


@pytest.mark.django_db
def test_a_claim_takes_due_rows_in_order_and_leaves_the_rest(clock):
    rows = make_rows(clock, 5)
    later = make_rows(clock, 1)[0]
    Event.objects.filter(pk=later.pk).update(next_attempt_at=clock.current + dt.timedelta(hours=1))
    token, items = make_queue(batch_size=3).claim()
    assert [item.pk for item in items] == [row.pk for row in rows[:3]]
    claimed = Event.objects.get(pk=rows[0].pk)
    assert claimed.status == WorkStatus.PROCESSING
    assert claimed.claim_token == token
    assert claimed.attempts == 1
    assert claimed.lease_expires_at == clock.current + dt.timedelta(seconds=60)
    _, rest = make_queue().claim()
    assert [item.pk for item in rest] == [row.pk for row in rows[3:]]


@pytest.mark.django_db
@pytest.mark.parametrize("relock", [True, False])
def test_an_expired_lease_is_taken_over_and_its_first_holder_changes_nothing(clock, relock):
    [row] = make_rows(clock, 1)
    queue = make_queue(relock=relock)
    slow_token, slow_items = queue.claim()

    clock.advance(seconds=59)
    assert queue.claim()[1] == []  # the lease still holds

    clock.advance(seconds=2)
    fast_token, fast_items = queue.claim()
    assert [item.pk for item in fast_items] == [row.pk]
    taken = Event.objects.get(pk=row.pk)
    assert (taken.attempts, taken.claim_token, taken.error_code) == (2, fast_token, "worker_lost")

    late = queue.run(token=slow_token, items=slow_items, work=CountingWork())
    assert (late.skipped, late.processed) == (1, [])
    assert runs_of(row) == 0

    done = queue.run(token=fast_token, items=fast_items, work=CountingWork())
    assert done.processed == [row.pk]
    row.refresh_from_db()
    assert (row.status, row.error_code, row.last_error) == (WorkStatus.PROCESSED, "", "")
    assert runs_of(row) == 1


@pytest.mark.django_db
@pytest.mark.parametrize("relock", [True, False])
def test_a_row_whose_workers_keep_dying_is_dead_lettered(clock, relock):
    [row] = make_rows(clock, 1)
    queue = make_queue(relock=relock)
    for _ in range(POLICY.max_attempts):
        assert len(queue.claim()[1]) == 1  # and the worker dies
        clock.advance(seconds=61)
    outcome = claim_and_run(queue, CountingWork())
    assert (outcome.claimed, outcome.dead_lettered, outcome.processed) == (1, 1, [])
    row.refresh_from_db()
    assert (row.status, row.attempts) == (WorkStatus.DEAD_LETTERED, POLICY.max_attempts + 1)
    assert row.error_code == "worker_lost"
    assert runs_of(row) == 0, "a row past its attempts is not run again"


@pytest.mark.django_db
def test_without_the_re_lock_a_batch_with_a_row_taken_over_is_redone_without_it(clock):
    """The done mark finds the row another worker took over: the batch rolls back, each
    item it had kept is dropped, and it runs again without that row, whose work never
    commits twice."""
    rows = make_rows(clock, 4)
    queue = make_queue(relock=False)
    token, items = queue.claim()
    clock.advance(seconds=61)
    # Another worker takes one row over (the others' leases are renewed by hand).
    Event.objects.exclude(pk=rows[1].pk).update(
        lease_expires_at=clock.current + dt.timedelta(seconds=60)
    )
    other_token, [taken] = queue.claim()
    assert taken.pk == rows[1].pk

    work = CountingWork()
    with CaptureQueriesContext(connection) as captured:
        outcome = queue.run(token=token, items=items, work=work)
    assert (sorted(outcome.processed), outcome.skipped) == (
        sorted(row.pk for row in rows if row.pk != taken.pk),
        1,
    )
    assert sorted(work.dropped_ids) == sorted(row.pk for row in rows)  # the first pass
    assert [runs_of(row) for row in rows] == [1, 0, 1, 1]
    # No re-lock: the first pass's done mark checks the claim (the rows locked after it are
    # the renewal of the ones still held).
    statements = [query["sql"] for query in captured.captured_queries]
    checked = next(n for n, sql in enumerate(statements) if "v.token" in sql)
    assert not any("FOR UPDATE" in sql for sql in statements[:checked])
    taken.refresh_from_db()
    assert (taken.status, taken.claim_token) == (WorkStatus.PROCESSING, other_token)

    assert queue.run(token=other_token, items=[taken], work=CountingWork()).processed == [taken.pk]
    assert [runs_of(row) for row in rows] == [1, 1, 1, 1]


@pytest.mark.django_db
def test_without_the_re_lock_the_rows_still_held_get_a_fresh_lease_before_the_rerun(clock):
    """The lease ran out for the whole batch: what another worker has not taken yet is
    renewed before the batch runs again, so it cannot be taken over meanwhile."""
    rows = make_rows(clock, 3)
    queue = make_queue(relock=False, batch_size=1)
    token, items = queue.claim(limit=3)
    clock.advance(seconds=61)
    _, [taken] = queue.claim()  # one row only: the others' leases ran out too
    seen: list[list[uuid.UUID]] = []

    class Watching(CountingWork):
        def begin(self, items: list[Event]) -> None:
            seen.append([item.pk for item in items])
            if len(seen) == 2:  # the rerun: its rows are renewed, none can be taken
                assert queue.claim()[1] == []

    outcome = queue.run(token=token, items=items, work=Watching())
    assert (len(outcome.processed), outcome.skipped) == (2, 1)
    assert [len(each) for each in seen] == [3, 2]
    assert [runs_of(row) for row in rows].count(1) == 2
    assert runs_of(Event.objects.get(pk=taken.pk)) == 0


@pytest.mark.django_db
def test_without_the_re_lock_a_failure_of_a_row_taken_over_is_not_recorded(clock):
    [row] = make_rows(clock, 1)
    queue = make_queue(relock=False)
    token, items = queue.claim()
    clock.advance(seconds=61)
    other_token, _ = queue.claim()
    outcome = queue.run(token=token, items=items, work=CountingWork(fail=lambda item: WorkError()))
    assert (outcome.failed, outcome.skipped, outcome.processed) == (0, 1, [])
    row.refresh_from_db()
    assert (row.status, row.claim_token, runs_of(row)) == (WorkStatus.PROCESSING, other_token, 0)


# --- outcomes ---


@pytest.mark.django_db
def test_success_is_recorded_in_bulk_with_the_work_s_own_columns(clock):
    rows = make_rows(clock, 4)
    work = CountingWork()
    outcome = claim_and_run(make_queue(), work)
    assert sorted(outcome.processed) == sorted(row.pk for row in rows)
    assert sorted(work.kept_ids) == sorted(row.pk for row in rows)
    for row in rows:
        row.refresh_from_db()
        assert row.status == WorkStatus.PROCESSED
        assert row.external_id == f"done-{row.payload['n']}"
        assert (row.claim_token, row.lease_expires_at, row.next_attempt_at) == (None, None, None)


@pytest.mark.django_db
def test_a_transient_error_retries_with_capped_backoff_and_jitter(clock):
    [row] = make_rows(clock, 1)
    queue = make_queue(retry_policy=lambda item: RetryPolicy(2, 2, 5, 10))
    work = CountingWork(fail=lambda item: WorkError("provider timed out", code="timeout"))
    for attempt in range(1, 5):
        outcome = claim_and_run(queue, work)
        assert (outcome.failed, outcome.dead_lettered) == (1, 0)
        row.refresh_from_db()
        assert (row.status, row.attempts, row.error_code) == (WorkStatus.FAILED, attempt, "timeout")
        assert row.last_error == "WorkError: provider timed out"
        ceiling = min(5, 2 * 2 ** (attempt - 1))
        delay = (row.next_attempt_at - clock.current).total_seconds()
        assert ceiling / 2 <= delay <= ceiling
        assert outcome.next_retry_at == row.next_attempt_at
        # Not claimable before it is due; claimable once it is.
        clock.advance(seconds=delay - 0.01)
        assert queue.claim()[1] == []
        clock.set(row.next_attempt_at)
    assert runs_of(row) == 0, "every failed attempt's writes were rolled back"


@pytest.mark.django_db
def test_a_retry_waits_at_least_as_long_as_the_other_side_asked(clock):
    [row] = make_rows(clock, 1)
    queue = make_queue(retry_policy=lambda item: RetryPolicy(2, 2, 5, 10))
    busy = WorkError("provider busy", code="throttled")
    busy.retry_after = 120.0

    claim_and_run(queue, CountingWork(fail=lambda item: busy))

    row.refresh_from_db()
    assert row.status == WorkStatus.FAILED
    assert row.next_attempt_at == clock.current + dt.timedelta(seconds=120)


@pytest.mark.django_db
def test_a_permanent_error_dead_letters_at_once(clock):
    [row] = make_rows(clock, 1)
    work = CountingWork(fail=lambda item: WorkError("address rejected", permanent=True))
    outcome = claim_and_run(make_queue(), work)
    assert (outcome.failed, outcome.dead_lettered, outcome.next_retry_at) == (0, 1, None)
    row.refresh_from_db()
    assert (row.status, row.attempts, row.next_attempt_at) == (WorkStatus.DEAD_LETTERED, 1, None)
    assert (row.error_code, row.claim_token) == ("work_error", None)


@pytest.mark.django_db
def test_an_unexpected_exception_is_transient_and_named_by_its_class(clock):
    [row] = make_rows(clock, 1)
    outcome = claim_and_run(make_queue(), CountingWork(fail=lambda item: KeyError("sku")))
    assert outcome.failed == 1
    row.refresh_from_db()
    assert (row.status, row.error_code) == (WorkStatus.FAILED, "exception:KeyError")
    assert row.last_error == "KeyError: 'sku'"


@pytest.mark.django_db
def test_transient_errors_dead_letter_when_the_attempts_run_out(clock):
    [row] = make_rows(clock, 1)
    queue = make_queue()
    work = CountingWork(fail=lambda item: WorkError("still down"))
    for attempt in range(1, POLICY.max_attempts + 1):
        outcome = claim_and_run(queue, work)
        row.refresh_from_db()
        assert row.attempts == attempt
        if attempt < POLICY.max_attempts:
            assert row.status == WorkStatus.FAILED
            clock.set(row.next_attempt_at)
    assert outcome.dead_lettered == 1
    assert (row.status, row.next_attempt_at) == (WorkStatus.DEAD_LETTERED, None)
    assert row.last_error == "WorkError: still down"
    clock.advance(days=1)
    assert queue.claim()[1] == []


@pytest.mark.django_db
def test_one_failing_item_costs_only_its_own_writes(clock):
    rows = make_rows(clock, 5)
    failing = rows[2]
    work = CountingWork(fail=lambda item: RuntimeError("no") if item.pk == failing.pk else None)
    outcome = claim_and_run(make_queue(), work)
    assert sorted(outcome.processed) == sorted(row.pk for row in rows if row is not failing)
    assert work.dropped_ids == [failing.pk]
    assert [runs_of(row) for row in rows] == [1, 1, 0, 1, 1]
    assert Event.objects.get(pk=failing.pk).status == WorkStatus.FAILED


# --- the dead-letter queue and the wake-up ---


@pytest.mark.django_db(transaction=True)
def test_requeue_gives_dead_rows_fresh_attempts_and_wakes_the_workers(clock, broker):
    dead, done = make_rows(clock, 2, status=WorkStatus.DEAD_LETTERED, attempts=3)
    Event.objects.filter(pk=done.pk).update(status=WorkStatus.PROCESSED)
    Event.objects.filter(pk=dead.pk).update(last_error="WorkError: down", next_attempt_at=None)
    clock.advance(hours=1)
    queue = make_queue()

    assert queue.requeue(ids=[dead.pk, done.pk]) == 1
    dead.refresh_from_db()
    assert (dead.status, dead.attempts) == (WorkStatus.ACCEPTED, 0)
    assert dead.next_attempt_at == clock.current
    assert dead.last_error == "WorkError: down"  # kept until an attempt succeeds
    assert Event.objects.get(pk=done.pk).status == WorkStatus.PROCESSED
    assert wake.flush()
    [message] = broker()
    assert message["body"][:2] == [[], {}]

    assert claim_and_run(queue, CountingWork()).processed == [dead.pk]
    assert queue.requeue(ids=[dead.pk]) == 0


@pytest.mark.django_db
def test_the_wake_up_is_debounced_and_published_by_task_name(broker):
    queue = make_queue(wake_debounce_seconds=30)
    queue.wake()
    queue.wake()
    assert wake.flush()
    assert len(broker()) == 1
    # Another process within the interval: its own debounce has not seen the first.
    wake._local_next_check.clear()
    queue.wake()
    assert wake.flush()
    assert len(broker()) == 1
    # A worker that ran dry re-arms the signal: the next commit wakes it again.
    queue.rearm()
    queue.wake()
    assert wake.flush()
    assert len(broker()) == 2

    queue.wake_later(countdown=90)
    queue.publish()
    messages = broker()
    assert len(messages) == 4
    assert [message["eta"] is not None for message in messages] == [False, False, True, False]


@pytest.mark.django_db
def test_a_request_that_wakes_the_workers_never_waits_on_the_cache_or_the_broker(
    broker, monkeypatch
):
    """The question and the publish run on the waker thread, not the caller's."""
    callers: set[int] = set()
    original = wake._wake_now

    def stalled_wake_now(**kwargs: Any) -> None:
        callers.add(threading.get_ident())
        time.sleep(0.5)  # a cache or broker that takes its time
        original(**kwargs)

    monkeypatch.setattr(wake, "_wake_now", stalled_wake_now)
    started = time.monotonic()
    make_queue().wake()
    assert time.monotonic() - started < 0.1
    assert wake.flush()
    assert len(callers) == 1
    assert threading.get_ident() not in callers
    assert len(broker()) == 1


@pytest.mark.django_db
def test_a_wake_up_with_the_broker_away_fails_fast_and_keeps_the_debounce(broker):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    original = celery_app.conf.broker_write_url
    celery_app.conf.broker_write_url = closed
    wake.reset()
    try:
        started = time.monotonic()
        assert wake.publish(TASK) is False
        make_queue(wake_debounce_seconds=30).wake()
        assert wake.flush()
        assert time.monotonic() - started < 3
    finally:
        celery_app.conf.broker_write_url = original
        wake.reset()
    # The failed wake-up kept the shared debounce: the next one does not try again.
    wake._local_next_check.clear()
    make_queue(wake_debounce_seconds=30).wake()
    assert wake.flush()
    assert broker() == []


# --- retry policies ---


def test_backoff_doubles_up_to_the_cap_with_half_of_it_random():
    policy = RetryPolicy(base_seconds=2, factor=2, cap_seconds=600, max_attempts=8)
    for attempt, ceiling in [(1, 2), (2, 4), (5, 32), (9, 512), (10, 600), (30, 600)]:
        delays = {policy.delay(attempt).total_seconds() for _ in range(50)}
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
        assert len(delays) > 1


def test_a_policy_is_overridden_by_settings_and_then_by_its_owner(settings):
    default = RetryPolicy(2, 2, 600, 8)

    class Owner:
        work_retry_max_attempts = None
        work_retry_cap_seconds = None

    owner = Owner()
    pick = dict(default=default, setting_prefix="WORK_RETRY_", field_prefix="work_retry_")
    assert retry_policy_for(owner, **pick) == default
    settings.WORK_RETRY_MAX_ATTEMPTS = 3
    settings.WORK_RETRY_CAP_SECONDS = 60
    assert retry_policy_for(owner, **pick) == RetryPolicy(2, 2, 60, 3)
    owner.work_retry_max_attempts = 5
    assert retry_policy_for(owner, **pick) == RetryPolicy(2, 2, 60, 5)


@pytest.mark.django_db
def test_a_batch_without_failures_pays_for_one_savepoint_not_one_per_item(clock):
    make_rows(clock, 10)
    finished: list[int] = []

    class Work(CountingWork):
        def finish(self, items: list[Event]) -> None:
            finished.append(len(items))

    queue = make_queue()
    token, items = queue.claim()
    with CaptureQueriesContext(connection) as captured:
        outcome = queue.run(token=token, items=items, work=Work())
    assert len(outcome.processed) == 10
    assert finished == [10]
    savepoints = [q for q in captured.captured_queries if q["sql"].startswith("SAVEPOINT")]
    # The batch's transaction (a savepoint itself inside the test's) and the batch's one.
    assert len(savepoints) == 2


@pytest.mark.django_db(transaction=True)
def test_writes_gathered_in_the_optimistic_pass_are_made_at_its_end_and_redone_item_by_item(
    clock,
):
    """`finish_together` writes for every item at once inside the batch's savepoint; when it
    raises, the savepoint rolls back and each item runs alone, doing its own share."""
    rows = make_rows(clock, 4)
    calls: list[str] = []

    class Gathering(CountingWork):
        def begin_together(self, items: list[Event]) -> None:
            self.together = True

        def begin(self, items: list[Event]) -> None:
            self.together = False

        def run(self, item: Event) -> None:
            if not self.together:
                Event.objects.filter(pk=item.pk).update(email=f"alone-{item.payload['n']}")
                calls.append("alone")

        def finish_together(self, items: list[Event]) -> None:
            calls.append(f"together:{len(items)}")
            Event.objects.filter(pk__in=[item.pk for item in items]).update(email="together")
            if fail_together:
                raise RuntimeError("one of the rows met a unique key")

    fail_together = False
    outcome = claim_and_run(make_queue(), Gathering())
    assert (len(outcome.processed), calls) == (4, ["together:4"])
    assert set(Event.objects.values_list("email", flat=True)) == {"together"}

    Event.objects.update(status=WorkStatus.ACCEPTED, next_attempt_at=clock.current)
    calls.clear()
    fail_together = True
    outcome = claim_and_run(make_queue(), Gathering())
    assert (len(outcome.processed), outcome.failed) == (4, 0)
    assert calls == ["together:4", "alone", "alone", "alone", "alone"]
    emails = Event.objects.filter(pk__in=[row.pk for row in rows]).values_list("email", flat=True)
    assert sorted(emails) == ["alone-0", "alone-1", "alone-2", "alone-3"]


class FinishedWork(BatchWork[Event]):
    """Work done before the rows are recorded: only its aggregate write and columns."""

    def __init__(self) -> None:
        self.finished: list[uuid.UUID] = []

    def finish(self, items: list[Event]) -> None:
        self.finished.extend(item.pk for item in items)
        Event.objects.filter(pk__in=[item.pk for item in items]).update(email="announced")

    def done_values(self, items: list[Event]) -> dict[str, Any]:
        return {"external_id": PerItem({item.pk: f"done-{item.payload['n']}" for item in items})}


@pytest.mark.django_db
def test_complete_records_the_rows_its_claim_holds_in_one_statement(clock):
    rows = make_rows(clock, 3)
    queue = make_queue()
    slow_token, slow_items = queue.claim(limit=2)
    token, items = queue.claim()
    # The first claim's lease ran out and another worker took its first row over.
    taken_token = uuid.uuid4()
    Event.objects.filter(pk=rows[0].pk).update(attempts=2, claim_token=taken_token)

    work = FinishedWork()
    with CaptureQueriesContext(connection) as captured:
        outcome = queue.complete(token=slow_token, items=slow_items, work=work)
    assert (outcome.processed, outcome.skipped) == ([rows[1].pk], 1)
    assert work.finished == [rows[1].pk]
    statements = [q["sql"].split()[0] for q in captured.captured_queries]
    # One to mark the rows held and name them, one for the work's own write; no lock
    # taken first and no savepoint but the transaction's own (the test's is outside).
    assert statements == ["SAVEPOINT", "UPDATE", "UPDATE", "RELEASE"]

    queue.complete(token=token, items=items, work=work)
    states = {
        row.pk: (row.status, row.external_id, row.email, row.claim_token)
        for row in Event.objects.filter(pk__in=[row.pk for row in rows])
    }
    assert states == {
        rows[0].pk: (WorkStatus.PROCESSING, None, None, taken_token),
        rows[1].pk: (WorkStatus.PROCESSED, "done-1", "announced", None),
        rows[2].pk: (WorkStatus.PROCESSED, "done-2", "announced", None),
    }


@pytest.mark.django_db
@pytest.mark.parametrize("with_json_values", [False, True])
def test_per_item_values_are_recorded_as_given_whichever_way_they_travel(clock, with_json_values):
    """Plain values (text, UUIDs, times) go as one JSON array of rows, others (a JSON
    document) as an array per column: the rows end the same either way."""
    rows = make_rows(clock, 3)
    when = {
        row.pk: clock.current + dt.timedelta(seconds=n, microseconds=7)
        for n, row in enumerate(rows)
    }

    class Work(CountingWork):
        def done_values(self, items: list[Event]) -> dict[str, Any]:
            values: dict[str, Any] = {
                "external_id": PerItem({item.pk: f'é "{item.payload["n"]}"' for item in items}),
                "occurred_at": PerItem({item.pk: when[item.pk] for item in items}),
                "contact_id": PerItem({item.pk: None for item in items}),
            }
            if with_json_values:
                values["payload"] = PerItem({item.pk: {"done": item.pk.hex} for item in items})
            return values

    outcome = claim_and_run(make_queue(), Work())

    assert len(outcome.processed) == 3
    for row in rows:
        row.refresh_from_db()
        assert row.status == WorkStatus.PROCESSED
        assert row.external_id == f'é "{rows.index(row)}"'
        assert row.occurred_at == when[row.pk]
        assert row.contact_id is None
        if with_json_values:
            assert row.payload == {"done": row.pk.hex}
