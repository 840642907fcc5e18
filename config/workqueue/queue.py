"""A work queue over one model: claim, run, record outcomes, requeue, wake and drain.

A claim is a short transaction (`SELECT ... FOR UPDATE SKIP LOCKED`, then mark the rows
`processing` with a claim token, `attempts + 1` and a lease). The claimed batch is then
run in one transaction that checks the token, so a row's work commits at most once
however often a batch is delivered, and a row whose worker died becomes claimable again
when its lease runs out (`attempts` counts claims, so a row that keeps killing workers
still dead-letters). The check is either a re-lock of the rows when the transaction
starts (the default: a row is then never taken over while it is worked) or, for a queue
whose work only writes the database and locks what its items stand for itself
(`relock=False`), the done mark's own conditional update: a batch that finds a row taken
over there rolls back, renews the lease of the rows it still holds and is redone without
the lost one. The batch runs in one savepoint; only when an item fails is it run again
with a savepoint per item, so a failure costs only its own writes and a batch without
failures pays for no per-item savepoints.

When the batch's transaction fails at its COMMIT (a serialization failure or deadlock
found then, a deferred constraint, the connection lost), nothing of it was kept, and its
rows are not left `processing` until their lease runs out: a fresh transaction hands each
row the claim still holds back as a failed attempt (`CommitFailed`, or the item's own
error when it had failed in the batch), retried after the policy's backoff or dead-lettered
once out of attempts, and the batch returns as one with failures does
(`committing.batch_hand_back`). Only when that cannot be written either (the database is
away) does the commit's error go on, and the lease hands the rows on.
"""

import datetime as dt
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic

from celery.exceptions import SoftTimeLimitExceeded
from django.db import models, transaction
from django.db.models import Prefetch, prefetch_related_objects

from config.runtime import clock
from config.workqueue import wake as wakeup
from config.workqueue.claiming import rows_claim
from config.workqueue.committing import CommitLost, Failures, batch_hand_back, batch_transaction
from config.workqueue.errors import TimeLimitReached, WorkerLost
from config.workqueue.models import WorkStatus
from config.workqueue.policy import RetryPolicy
from config.workqueue.recording import done_record, failure_record, rows_held
from config.workqueue.registry import register_queue, work_outcomes_count
from config.workqueue.work import BatchOutcome, BatchWork, T

logger = logging.getLogger(__name__)


def _tunable(value: float | Callable[[], float]) -> float:
    return value() if callable(value) else value


class _ClaimsLost(Exception):
    """Raised to roll the batch back: its done mark found rows taken over (lease out)."""

    def __init__(self, keys: set[Any]) -> None:
        super().__init__(f"{len(keys)} claimed rows were taken over")
        self.keys = keys


# The claims made by the batch a `drain` in this thread is running: what it hands back
# when the task's soft time limit runs out (see `drain`).
_draining = threading.local()


@dataclass(frozen=True, eq=False)
class WorkQueue(Generic[T]):
    """The queue of one model's rows, drained by the Celery task named `task`."""

    model: type[T]
    # Published by name to wake a worker; the task drains the queue (`drain`).
    task: str
    wake_key: str  # the cache key of the shared wake-up debounce
    retry_policy: Callable[[T], RetryPolicy]
    # Rows one claim takes: small enough to keep claims short, big enough to amortise.
    batch_size: int | Callable[[], int] = 100
    # How long a claim holds before another worker may take the row over.
    lease_seconds: float | Callable[[], float] = 60.0
    # At most one wake-up task per this many seconds across all processes.
    wake_debounce_seconds: float | Callable[[], float] = 1.0
    # How long a worker that ran dry waits before its last look (see `drain`).
    settle_seconds: float | Callable[[], float] = 0.3
    # The order a claimed batch is worked in (field names, ascending), and the related
    # rows its items load with them, once per batch (lookups or `Prefetch`es; before
    # them `load_related`, for rows a lookup would look for in every partition of a table
    # partitioned by time: emails, read by `emails_by_ids` in their partitions alone).
    order_by: tuple[str, ...] = ("next_attempt_at",)
    prefetch_related: "tuple[str | Prefetch[Any, Any, Any], ...]" = ()
    load_related: Callable[[list[T]], None] | None = None
    # Whether a batch's transaction starts by locking its claimed rows again and checking
    # their token (a row whose lease runs out while it is worked is then not taken over:
    # keep it for work a rollback cannot undo, an SMTP or provider call), or checks the
    # token only in the done mark's update: a queue whose work only writes the database
    # and locks what its items stand for (automations lock the runs) saves the re-lock,
    # and a batch whose done mark finds a row taken over rolls back and is redone without.
    relock: bool = True

    def __post_init__(self) -> None:
        # Every queue is known to the metrics and the staff dashboard (registry.py).
        register_queue(self)

    @property
    def label(self) -> str:
        """The queue's name in metrics and the console: its model's label."""
        return str(self.model._meta.label)

    @property
    def _rows(self) -> models.Manager[T]:
        return self.model._default_manager

    @property
    def _label(self) -> str:
        return str(self.model._meta.verbose_name_plural)

    # --- claim ---

    def claim(self, *, limit: int | None = None) -> tuple[uuid.UUID, list[T]]:
        """Claims up to `limit` due rows (and any whose lease expired) for this worker."""
        limit = limit or int(_tunable(self.batch_size))
        now = clock.now()
        token = uuid.uuid4()
        lease_until = now + dt.timedelta(seconds=_tunable(self.lease_seconds))
        with transaction.atomic():
            items = rows_claim(
                self.model,
                limit=limit,
                now=now,
                token=token,
                lease_until=lease_until,
                label=self._label,
            )
        held = getattr(_draining, "claims", None)
        if held is not None:
            held.append((self, token, items))
        if self.load_related and items:
            self.load_related(items)
        if self.prefetch_related:
            prefetch_related_objects(items, *self.prefetch_related)
        items.sort(key=self._order_key)
        return token, items

    def _order_key(self, item: T) -> tuple[Any, ...]:
        return tuple(
            (value is None, value) for value in (getattr(item, name) for name in self.order_by)
        )

    # --- run ---

    def run(
        self,
        *,
        token: uuid.UUID,
        items: list[T],
        work: BatchWork[T],
        outcome: BatchOutcome | None = None,
    ) -> BatchOutcome:
        """Works claimed rows in one transaction: the rows this claim still holds are
        worked and their outcomes written in bulk. A batch costs one commit; a worker that
        dies mid-batch commits nothing and the lease hands the batch on.

        The batch first runs optimistically, every item in one savepoint. Only when an
        item raises is that rolled back and the batch run again with a savepoint per
        item, so one failure costs only its own writes. `work` therefore sees an item
        run twice in one attempt when another item of its batch failed; only the second
        run's writes are kept. Without the re-lock (`relock`), a batch whose done mark
        finds rows taken over is rolled back (`dropped` for each item it had kept) and
        run again without them. A batch whose commit fails is handed back at once, each
        row a failed attempt (`committing.batch_hand_back`); nothing of it is done.
        """
        if outcome is None:
            outcome = BatchOutcome(claimed=len(items))
        failed_before, dead_before = outcome.failed, outcome.dead_lettered
        while True:
            tally = (outcome.failed, outcome.dead_lettered, outcome.skipped, outcome.next_retry_at)
            failures: Failures = {}
            try:
                done = self._run_batch(
                    token=token, items=items, work=work, outcome=outcome, failures=failures
                )
            except CommitLost as failed:
                # Its failure marks were rolled back with it: recounted as they are redone.
                outcome.failed, outcome.dead_lettered, outcome.skipped, outcome.next_retry_at = (
                    tally
                )
                batch_hand_back(
                    self.model,
                    self.retry_policy,
                    token=token,
                    items=items,
                    work=work,
                    error=failed.error,
                    failures=failures,
                    outcome=outcome,
                )
                done = []
            except _ClaimsLost as lost:
                # Its writes and failure marks were rolled back: counted again in the rerun.
                outcome.failed, outcome.dead_lettered, outcome.skipped, outcome.next_retry_at = (
                    tally
                )
                # One claim, one lease: it ran out for every row, so the rows still held get
                # a fresh one first, or other workers could take them over during the rerun.
                held = self._renew(
                    token=token, keys=[item.pk for item in items if item.pk not in lost.keys]
                )
                outcome.skipped += len(items) - len(held)
                items = [item for item in items if item.pk in held]
                continue
            break
        outcome.processed.extend(item.pk for item in done)
        work_outcomes_count(
            self.label,
            done=len(done),
            retried=outcome.failed - failed_before,
            dead_lettered=outcome.dead_lettered - dead_before,
        )
        if outcome.next_retry_at is not None:
            self.wake_later(countdown=(outcome.next_retry_at - clock.now()).total_seconds())
        return outcome

    def _renew(self, *, token: uuid.UUID, keys: list[Any]) -> set[Any]:
        """Gives the rows among `keys` this claim still holds a fresh lease; their keys."""
        lease_until = clock.now() + dt.timedelta(seconds=_tunable(self.lease_seconds))
        with transaction.atomic():
            held = set(
                self._rows.select_for_update()
                .filter(pk__in=keys, status=WorkStatus.PROCESSING, claim_token=token)
                .values_list("pk", flat=True)
            )
            self._rows.filter(pk__in=list(held)).update(lease_expires_at=lease_until)
        return held

    def _run_batch(
        self,
        *,
        token: uuid.UUID,
        items: list[T],
        work: BatchWork[T],
        outcome: BatchOutcome,
        failures: Failures,
    ) -> list[T]:
        """One pass over the batch in its transaction; the items done. The failures it
        records are noted in `failures` too, to be recorded again if its commit fails."""
        if not items:
            return []
        with batch_transaction():
            if self.relock:
                held = rows_held(self.model, token=token, items=items)
                # Rows not held were taken over by another worker (our lease ran out).
                outcome.skipped += sum(1 for item in items if item.pk not in held)
                items = [item for item in items if item.pk in held]
            live: list[T] = []
            for item in items:
                # A first attempt is always allowed (a policy allows at least one).
                if item.attempts > 1 and item.attempts > self.retry_policy(item).max_attempts:
                    name = self.model._meta.verbose_name
                    lost = WorkerLost(f"Workers kept stopping while processing this {name}.")
                    self._failed(item, token=token, error=lost, outcome=outcome)
                    failures[item.pk] = (lost, False)
                else:
                    live.append(item)
            done = self._run_together(live, work) if len(live) > 1 else None
            if done is None:
                done = self._run_apart(live, work, token=token, outcome=outcome, failures=failures)
            if done:
                work.finish(done)
                marked = done_record(
                    self.model,
                    token=token,
                    items=done,
                    values=work.done_values(done),
                    held=self.relock,
                )
                if len(marked) < len(done):
                    for item in done:
                        work.dropped(item)
                    raise _ClaimsLost({item.pk for item in done} - marked)
        return done

    def _failed(
        self, item: T, *, token: uuid.UUID, error: Exception, outcome: BatchOutcome
    ) -> None:
        """Records a failed attempt of `item` under this queue's retry policy."""
        failure_record(
            self.model, self.retry_policy, item=item, token=token, error=error, outcome=outcome
        )

    def complete(self, *, token: uuid.UUID, items: list[T], work: BatchWork[T]) -> BatchOutcome:
        """Records claimed rows whose work already happened outside the database (a
        notification the provider accepted) as done: for a batch where `run` would have
        nothing left to do per item, so no item can fail. Only `work.finish` and
        `work.done_values` are used.

        On PostgreSQL one conditional update marks done the rows this claim still holds
        and names them, then `finish` writes for exactly those in the same transaction:
        one statement where `run` locks the rows, checks them, opens a savepoint and then
        updates them. Rows another worker took over (the lease ran out) are skipped, as in
        `run`; a row is done however many attempts it took, since its work did happen.
        When the transaction fails at its commit, the rows are handed back as in `run`
        (each `dropped`, then a failed attempt), and their work may be done again."""
        outcome = BatchOutcome(claimed=len(items))
        if not items:
            return outcome
        try:
            with batch_transaction():
                marked = done_record(
                    self.model,
                    token=token,
                    items=items,
                    values=work.done_values(items),
                    held=False,
                )
                done = [item for item in items if item.pk in marked]
                if done:
                    work.finish(done)
                outcome.skipped = len(items) - len(done)
        except CommitLost as failed:
            outcome.skipped = 0
            batch_hand_back(
                self.model,
                self.retry_policy,
                token=token,
                items=items,
                work=work,
                error=failed.error,
                failures={},
                outcome=outcome,
            )
            done = []
        outcome.processed.extend(item.pk for item in done)
        work_outcomes_count(
            self.label,
            done=len(done),
            retried=outcome.failed,
            dead_lettered=outcome.dead_lettered,
        )
        if outcome.next_retry_at is not None:
            self.wake_later(countdown=(outcome.next_retry_at - clock.now()).total_seconds())
        return outcome

    def _run_together(self, items: list[T], work: BatchWork[T]) -> list[T] | None:
        """Every item in one savepoint; None (and nothing kept) when one of them raised."""
        try:
            with transaction.atomic():
                work.begin(items)
                work.begin_together(items)
                for item in items:
                    work.run(item)
                    work.kept(item)
                work.finish_together(items)
        except SoftTimeLimitExceeded:
            raise
        except Exception:
            logger.debug("A batch of %s had a failure; working it item by item", self._label)
            return None
        return items

    def _run_apart(
        self,
        items: list[T],
        work: BatchWork[T],
        *,
        token: uuid.UUID,
        outcome: BatchOutcome,
        failures: Failures,
    ) -> list[T]:
        """Each item in a savepoint of its own; failures are recorded as they happen."""
        done: list[T] = []
        work.begin(items)
        for item in items:
            try:
                with transaction.atomic():
                    work.run(item)
            except SoftTimeLimitExceeded:
                raise
            except Exception as error:
                work.dropped(item)
                self._failed(item, token=token, error=error, outcome=outcome)
                failures[item.pk] = (error, True)
                continue
            work.kept(item)
            done.append(item)
        return done

    # --- the dead-letter queue ---

    def requeue(self, *, ids: Iterable[Any]) -> int:
        """Gives dead-lettered rows a fresh set of attempts, due now; others are left
        alone. The last error stays on the row until an attempt succeeds."""
        now = clock.now()
        with transaction.atomic():
            count = self._rows.filter(pk__in=list(ids), status=WorkStatus.DEAD_LETTERED).update(
                status=WorkStatus.ACCEPTED, attempts=0, next_attempt_at=now
            )
            if count:
                transaction.on_commit(self.wake)
        return count

    # --- waking and draining ---

    def wake(self) -> None:
        """Publishes the task unless a wake-up went out within the debounce interval."""
        wakeup.wake(task=self.task, key=self.wake_key, debounce_seconds=self.wake_debounce_seconds)

    def wake_later(self, *, countdown: float) -> None:
        """A wake-up after `countdown` seconds, for retries that become due then."""
        wakeup.publish(self.task, countdown=max(countdown, 0.0))

    def publish(self) -> None:
        """A wake-up now, not debounced: a task handing the rest of its work on."""
        wakeup.publish(self.task)

    def rearm(self) -> None:
        """Lets the next commit publish a wake-up again (a worker that ran dry)."""
        wakeup.rearm(key=self.wake_key)

    def drain(self, batch: Callable[[], int], *, budget_seconds: float) -> tuple[int, bool]:
        """Runs `batch` (claim and work one batch, return how many it claimed) while there
        is due work, for at most `budget_seconds`.

        Returns the number of rows claimed and whether work was left when the budget ran
        out (the caller then hands the rest to a fresh task).

        When the task's soft time limit runs out (`SoftTimeLimitExceeded`, raised by the
        Celery worker), the rows the batch under way still holds are handed back as a
        failed attempt each (`TimeLimitReached`: retried by the queue's policy, or
        dead-lettered once out of attempts) and the exception goes on to Celery.
        """
        outer = getattr(_draining, "claims", None)
        claims: list[tuple[WorkQueue[Any], uuid.UUID, list[Any]]] = []
        _draining.claims = claims

        def one() -> int:
            claims.clear()
            return batch()

        try:
            return self._drain(one, budget_seconds=budget_seconds)
        except SoftTimeLimitExceeded:
            for queue, token, items in claims:
                queue.release(token=token, items=items)
            raise
        finally:
            _draining.claims = outer

    def release(self, *, token: uuid.UUID, items: list[T]) -> None:
        """Records a failed attempt (`TimeLimitReached`) for each of `items` that claim
        `token` still holds: as when an attempt raises, it is retried after the policy's
        backoff (woken then) or dead-lettered. Rows done meanwhile are left alone. When the
        database cannot be reached (the limit ran out inside a statement), the rows' lease
        hands them on instead."""
        error = TimeLimitReached("The task's time limit ran out while this row was held.")
        outcome = BatchOutcome(claimed=len(items))
        try:
            for item in items:
                self._failed(item, token=token, error=error, outcome=outcome)
        except Exception:
            logger.warning("Could not hand back %s; their lease will", self._label, exc_info=True)
            return
        work_outcomes_count(
            self.label, done=0, retried=outcome.failed, dead_lettered=outcome.dead_lettered
        )
        if outcome.next_retry_at is not None:
            self.wake_later(countdown=(outcome.next_retry_at - clock.now()).total_seconds())

    def _drain(self, batch: Callable[[], int], *, budget_seconds: float) -> tuple[int, bool]:
        deadline = time.monotonic() + budget_seconds
        total = 0
        while True:
            claimed = batch()
            total += claimed
            if claimed == 0:
                # Re-arm the wake signal, then look once more: a row committed before the
                # re-arm is found now, one committed after it publishes a new wake-up
                # (once the web process's own short debounce has passed: the settle
                # covers that).
                self.rearm()
                claimed = batch()
                total += claimed
                if claimed == 0:
                    settle = _tunable(self.settle_seconds)
                    if settle <= 0:
                        return total, False
                    time.sleep(settle)
                    claimed = batch()
                    total += claimed
                    if claimed == 0:
                        return total, False
            if time.monotonic() >= deadline:
                return total, True
