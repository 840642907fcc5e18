"""What a family gives the work-queue kit for a claimed batch (`BatchWork`), the per-row
values it may set on the done rows (`PerItem`), and what a batch came to
(`BatchOutcome`)."""

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from config.workqueue.models import WorkItem

T = TypeVar("T", bound=WorkItem)


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

    def begin_together(self, items: list[T]) -> None:
        """Writes made for every item at once when the batch runs in one savepoint (a bulk
        insert instead of one per item). They roll back with the savepoint when an item
        fails, and the batch redone item by item does not make them: each item's `run`
        must then do its own share."""

    def finish_together(self, items: list[T]) -> None:
        """Writes gathered from every item of the batch run in one savepoint, made at once
        at its end inside that savepoint (one insert for the rows of all items instead of
        one per item). When they raise, the savepoint rolls back and the batch is redone
        item by item, where this is not called: each item's `run` must then make its own
        writes (`begin_together` tells the two passes apart)."""

    def run(self, item: T) -> None:
        """Works one item inside the batch's transaction; raising fails the attempt and
        rolls back what it wrote (`WorkError` says whether a retry can help)."""
        raise NotImplementedError

    def kept(self, item: T) -> None:
        """`item` succeeded: its writes will commit with the batch (in the one-savepoint
        pass, unless `finish_together` then raises and the batch is redone)."""

    def dropped(self, item: T) -> None:
        """`item` failed: its writes were rolled back. Called in the batch's transaction,
        whose commit its own writes share, before the kit records the failed attempt.
        When that transaction then fails at its commit, it is called again in the fresh
        transaction that hands the rows back (`committing.batch_hand_back`), for every
        item the claim still holds, done ones included, each followed by the failed
        attempt the kit records: the item's own error if it had failed, else a transient
        `CommitFailed`. So a write here must be conditional, and what it decides from the
        error and the attempts must agree with the kit's record (`final` when the error
        is permanent or the attempts are spent)."""

    def finish(self, items: list[T]) -> None:
        """Writes that belong to the done items together (a per-batch aggregate), in the
        batch's transaction, before they are marked done."""

    def done_values(self, items: list[T]) -> dict[str, Any]:
        """Columns to set on the done rows besides the kit's (a value, an expression, or
        a `PerItem`)."""
        return {}
