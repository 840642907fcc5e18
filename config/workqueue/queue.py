"""A work queue over one model: claim, run, record outcomes, requeue, wake and drain.

A claim is a short transaction (`SELECT ... FOR UPDATE SKIP LOCKED`, then mark the rows
`processing` with a claim token, `attempts + 1` and a lease). The claimed batch is then
run in one transaction that first re-locks the rows and checks the token, each item in a
savepoint of its own, so a row is worked at most once however often a batch is
delivered, and a row whose worker died becomes claimable again when its lease runs out
(`attempts` counts claims, so a row that keeps killing workers still dead-letters).
"""

import datetime as dt
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from django.db import models, transaction
from django.db.models import Case, F, Value, When

from config import clock
from config.workqueue import wake as wakeup
from config.workqueue.errors import WorkerLost, WorkError
from config.workqueue.models import DUE_STATUSES, WorkItem, WorkStatus
from config.workqueue.policy import RetryPolicy

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=WorkItem)

MAX_ERROR_LENGTH = 2000


@dataclass
class BatchOutcome:
    """What one claimed batch came to."""

    claimed: int = 0
    processed: list[Any] = field(default_factory=list)
    failed: int = 0
    dead_lettered: int = 0
    skipped: int = 0
    next_retry_at: dt.datetime | None = None


class PerItem:
    """A column value that differs from row to row in the bulk update of done rows."""

    def __init__(self, values: dict[Any, Any]) -> None:
        self.values = values


class BatchWork(Generic[T]):
    """What a family does with a claimed batch. The kit owns the transaction, the
    savepoints and the outcomes; a family overrides `run` and what else it needs."""

    def begin(self, items: list[T]) -> None:
        """Loads what the batch needs, once, before its first item runs."""

    def run(self, item: T) -> None:
        """Works one item inside the batch's transaction; raising fails the attempt and
        rolls back what it wrote (`WorkError` says whether a retry can help)."""
        raise NotImplementedError

    def kept(self, item: T) -> None:
        """`item` succeeded: its writes will commit with the batch."""

    def dropped(self, item: T) -> None:
        """`item` failed: its writes were rolled back."""

    def done_values(self, items: list[T]) -> dict[str, Any]:
        """Columns to set on the done rows besides the kit's (a value, an expression, or
        a `PerItem`)."""
        return {}


def _tunable(value: float | Callable[[], float]) -> float:
    return value() if callable(value) else value


@dataclass(frozen=True, eq=False)
class WorkQueue(Generic[T]):
    """The queue of one model's rows, drained by the Celery task named `task`."""

    model: type[T]
    # Published by name to wake a worker; the task drains the queue (`drain`).
    task: str
    # The cache key of the shared wake-up debounce.
    wake_key: str
    retry_policy: Callable[[T], RetryPolicy]
    # Rows one claim takes: small enough to keep claims short, big enough to amortise.
    batch_size: int | Callable[[], int] = 100
    # How long a claim holds before another worker may take the row over.
    lease_seconds: float | Callable[[], float] = 60.0
    # At most one wake-up task per this many seconds across all processes.
    wake_debounce_seconds: float | Callable[[], float] = 1.0
    # How long a worker that ran dry waits before its last look (see `drain`).
    settle_seconds: float | Callable[[], float] = 0.3
    # The order a claimed batch is worked in, and what its rows load with them.
    order_by: tuple[str, ...] = ("next_attempt_at",)
    select_related: tuple[str, ...] = ()

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
        with transaction.atomic():
            ids = list(
                self._rows.select_for_update(skip_locked=True)
                .filter(status__in=DUE_STATUSES, next_attempt_at__lte=now)
                .order_by("next_attempt_at")
                .values_list("pk", flat=True)[:limit]
            )
            lost: list[Any] = []
            if len(ids) < limit:
                lost = list(
                    self._rows.select_for_update(skip_locked=True)
                    .filter(status=WorkStatus.PROCESSING, lease_expires_at__lte=now)
                    .order_by("lease_expires_at")
                    .values_list("pk", flat=True)[: limit - len(ids)]
                )
            if lost:
                logger.warning("Reclaiming %d %s whose worker stopped", len(lost), self._label)
                self._rows.filter(pk__in=lost).update(
                    last_error=str(WorkerLost.__doc__), error_code=WorkerLost.code
                )
            claimed = ids + lost
            if not claimed:
                return token, []
            self._rows.filter(pk__in=claimed).update(
                status=WorkStatus.PROCESSING,
                attempts=F("attempts") + 1,
                claim_token=token,
                lease_expires_at=now + dt.timedelta(seconds=_tunable(self.lease_seconds)),
            )
        rows = self._rows.filter(pk__in=claimed, claim_token=token)
        if self.select_related:
            rows = rows.select_related(*self.select_related)
        return token, list(rows.order_by(*self.order_by))

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
        locked together, each runs in a savepoint of its own (so one failure costs only
        its own writes), and the outcomes are written in bulk. A batch costs one commit;
        a worker that dies mid-batch commits nothing and the lease hands the batch on."""
        if outcome is None:
            outcome = BatchOutcome(claimed=len(items))
        done: list[T] = []
        with transaction.atomic():
            held = set(
                self._rows.select_for_update()
                .filter(
                    pk__in=[item.pk for item in items],
                    status=WorkStatus.PROCESSING,
                    claim_token=token,
                )
                .values_list("pk", flat=True)
            )
            # Rows not held were taken over by another worker (our lease ran out).
            outcome.skipped += sum(1 for item in items if item.pk not in held)
            mine = [item for item in items if item.pk in held]
            work.begin(mine)
            for item in mine:
                try:
                    with transaction.atomic():
                        self._check_attempts(item)
                        work.run(item)
                except Exception as error:
                    work.dropped(item)
                    self._record_failure(item=item, token=token, error=error, outcome=outcome)
                    continue
                work.kept(item)
                done.append(item)
            if done:
                self._record_done(token=token, items=done, values=work.done_values(done))
        outcome.processed.extend(item.pk for item in done)
        if outcome.next_retry_at is not None:
            self.wake_later(countdown=(outcome.next_retry_at - clock.now()).total_seconds())
        return outcome

    def _check_attempts(self, item: T) -> None:
        if item.attempts > self.retry_policy(item).max_attempts:
            name = self.model._meta.verbose_name
            raise WorkerLost(f"Workers kept stopping while processing this {name}.")

    def _record_done(self, *, token: uuid.UUID, items: list[T], values: dict[str, Any]) -> None:
        columns: dict[str, Any] = {
            "status": WorkStatus.PROCESSED,
            "claim_token": None,
            "lease_expires_at": None,
            "next_attempt_at": None,
            "last_error": "",
            "error_code": "",
        }
        for name, value in values.items():
            columns[name] = self._per_item(name, value) if isinstance(value, PerItem) else value
        self._rows.filter(
            pk__in=[item.pk for item in items], status=WorkStatus.PROCESSING, claim_token=token
        ).update(**columns)

    def _per_item(self, name: str, value: PerItem) -> Case:
        column = self.model._meta.get_field(name)
        if column.is_relation:
            column = column.target_field  # type: ignore[union-attr]
        return Case(
            *[When(pk=pk, then=Value(each)) for pk, each in value.values.items()],
            output_field=column,  # type: ignore[arg-type]
        )

    def _record_failure(
        self, *, item: T, token: uuid.UUID, error: Exception, outcome: BatchOutcome
    ) -> None:
        policy = self.retry_policy(item)
        if isinstance(error, WorkError):
            code, permanent = error.code[:64], error.permanent
        else:
            code, permanent = f"exception:{type(error).__name__}"[:64], False
            logger.warning(
                "%s %s failed on attempt %d",
                self.model._meta.verbose_name,
                item.pk,
                item.attempts,
                exc_info=error,
            )
        message = f"{type(error).__name__}: {error}"[:MAX_ERROR_LENGTH]
        if permanent or item.attempts >= policy.max_attempts:
            status, next_attempt_at = WorkStatus.DEAD_LETTERED, None
            outcome.dead_lettered += 1
        else:
            status = WorkStatus.FAILED
            next_attempt_at = clock.now() + policy.delay(item.attempts)
            outcome.failed += 1
            if outcome.next_retry_at is None or next_attempt_at < outcome.next_retry_at:
                outcome.next_retry_at = next_attempt_at
        self._rows.filter(pk=item.pk, status=WorkStatus.PROCESSING, claim_token=token).update(
            status=status,
            next_attempt_at=next_attempt_at,
            claim_token=None,
            lease_expires_at=None,
            last_error=message,
            error_code=code,
        )

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
        wakeup.wake(
            task=self.task,
            key=self.wake_key,
            debounce_seconds=_tunable(self.wake_debounce_seconds),
        )

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
        """
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
