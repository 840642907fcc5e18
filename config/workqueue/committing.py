"""The work-queue kit's commit of a batch, and what it does when that commit fails.

A batch's work and outcomes are one transaction (`batch_transaction`). When its COMMIT
fails (a serialization failure or a deadlock found then, a deferred constraint, the
connection lost), nothing of the batch was kept, and its rows must not wait out their
lease `processing`: `batch_hand_back` records each row the claim still holds as a failed
attempt at once, in a transaction of its own, retried after the queue's backoff or
dead-lettered once out of attempts, as any failed attempt is."""

import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.db import DatabaseError, transaction

from config.workqueue.errors import CommitFailed
from config.workqueue.policy import RetryPolicy
from config.workqueue.recording import failure_record, rows_held
from config.workqueue.work import BatchOutcome, BatchWork, T

# The kit logs under one name, its queue module's.
logger = logging.getLogger("config.workqueue.queue")

# What a batch recorded of its items' failures inside its transaction: the error of each
# failed item, and whether the work was told it was `dropped`.
Failures = dict[Any, tuple[Exception, bool]]


class CommitLost(Exception):
    """The batch's transaction failed at its commit: nothing of it was kept."""

    def __init__(self, error: DatabaseError) -> None:
        super().__init__(str(error))
        self.error = error


@contextmanager
def batch_transaction() -> Iterator[None]:
    """`transaction.atomic()` for a batch, whose failure at the COMMIT of the outermost
    transaction is raised as `CommitLost` (inside another transaction, the batch's is a
    savepoint and commits with that one). A database error once the body completed is the
    commit's unless the first on-commit callback ran: the callbacks after it (a wake-up the
    work asked for) run once the commit held, and what they raise goes on as it is."""
    outermost = not transaction.get_connection().in_atomic_block
    committed = completed = False

    def held() -> None:
        nonlocal committed
        committed = True

    try:
        with transaction.atomic():
            if outermost:
                transaction.on_commit(held)
            yield
            completed = True
    except DatabaseError as error:
        if outermost and completed and not committed:
            raise CommitLost(error) from error
        raise


def batch_hand_back(
    model: type[T],
    retry_policy: Callable[[T], RetryPolicy],
    *,
    token: uuid.UUID,
    items: list[T],
    work: BatchWork[T],
    error: DatabaseError,
    failures: Failures,
    outcome: BatchOutcome,
) -> None:
    """Hands back at once the rows of a batch whose transaction failed at its commit
    (`error`), in a transaction of its own: each row the claim still holds (locked and
    checked first; a row another worker took over meanwhile is not touched) is recorded
    as the batch would have recorded it had its commit held, short of being done. An item
    that failed in the batch fails again with its own error (and is `dropped` again if it
    was), as its rolled-back failure mark had it; every other item is `dropped` (its
    writes are gone with the transaction) and fails with `CommitFailed`, a transient
    error. So the rows retry after the policy's backoff, or dead-letter when out of
    attempts, and the family's own state follows them through `dropped` as for any
    failure. `outcome` counts them (the caller resets it to what it was before the batch).

    When even this cannot be written (the database is away), `error` is raised and the
    rows' lease hands them on."""
    label = model._meta.verbose_name_plural
    logger.warning(
        "The transaction of a batch of %d %s failed at its commit; handing them back",
        len(items),
        label,
        exc_info=error,
    )
    failed = CommitFailed(f"{type(error).__name__}: {error}")
    try:
        with transaction.atomic():
            held = rows_held(model, token=token, items=items)
            for item in items:
                if item.pk not in held:
                    outcome.skipped += 1
                    continue
                cause, dropped = failures.get(item.pk, (failed, True))
                if dropped:
                    work.dropped(item)
                failure_record(
                    model, retry_policy, item=item, token=token, error=cause, outcome=outcome
                )
    except SoftTimeLimitExceeded:
        raise
    except Exception:
        logger.warning("Could not hand back %s; their lease will", label, exc_info=True)
        raise error from None
