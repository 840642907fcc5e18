"""The tables a family keeps partitioned by time (`config.db.partitions` makes their
partitions ahead and drops the expired ones), declared from the family's apps.py.

A family names its table, the time column it is partitioned by, and, by dotted path (its
modules load models, so they are imported at first use), the function giving the longest
retention any project may ask of those rows: a partition goes only when no project may
still keep a row of it. A family whose table has companions (rows elsewhere that must go
with the partition's, such as the idempotency keys of its events) names a function that
deletes them too. A family whose rows the time alone does not free (a row of an old
partition may still be in use, such as a run's timeline while the run waits) names a
function that says whether a partition past the retention may go. Free of models, so
apps.py may import it."""

from collections.abc import Callable
from dataclasses import dataclass

# `fn() -> days`: the longest retention, in days, that any project may keep the table's
# rows for; None keeps every partition (there is no project to ask).
RetentionDays = Callable[[], int | None]
# `fn(lower=, upper=) -> None`: deletes the rows elsewhere that belong to the table's rows
# of [lower, upper), before that partition is dropped.
BeforeDrop = Callable[..., None]
# `fn(lower=, upper=, before=) -> bool`: whether the partition [lower, upper), whose upper
# bound is at or before `before` (now less the longest retention), may go now; a partition
# it keeps is asked again at the next run.
MayDrop = Callable[..., bool]


@dataclass(frozen=True)
class PartitionedTable:
    """A parent table partitioned by range of `column` (a `timestamptz`), one partition
    per interval (the `PARTITION_INTERVAL` setting), and a default partition that keeps a
    row no partition covers until its partition is made. `storage` is given to every
    partition made (`WITH (...)`: PostgreSQL keeps a table's storage parameters on each
    partition, not on the parent), e.g. `fillfactor = 70`."""

    table: str
    column: str
    retention_days: RetentionDays | str
    before_drop: BeforeDrop | str | None = None
    may_drop: MayDrop | str | None = None
    storage: str = ""


_tables: dict[str, PartitionedTable] = {}


def register_partitioned_table(table: PartitionedTable) -> PartitionedTable:
    """Declares a partitioned table; a second declaration of the same table replaces it."""
    _tables[table.table] = table
    return table


def unregister_partitioned_table(table: str) -> None:
    _tables.pop(table, None)


def partitioned_tables() -> tuple[PartitionedTable, ...]:
    return tuple(_tables.values())
