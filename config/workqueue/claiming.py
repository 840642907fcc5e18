"""The work-queue kit's claim: due rows, then rows whose lease ran out, marked
`processing` with the claim's token and lease in one `UPDATE ... RETURNING` of the rows
`SELECT ... FOR UPDATE SKIP LOCKED` picked, and made instances without the ORM's per-row
work."""

import datetime as dt
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from django.db import connection, models

from config.db.bulk import rows_fetch
from config.db.fresh import Columns
from config.registries.partitions import partitioned_tables
from config.workqueue.errors import WorkerLost
from config.workqueue.models import DUE_STATUSES, WorkStatus
from config.workqueue.work import T

# The kit logs under one name, its queue module's.
logger = logging.getLogger("config.workqueue.queue")

_KIT_COLUMNS = (
    "status",
    "attempts",
    "next_attempt_at",
    "claim_token",
    "lease_expires_at",
    "last_error",
    "error_code",
)

_RETURNED: dict[type[models.Model], Columns[Any] | None] = {}


def _returned(model: type[T]) -> "Columns[T] | None":
    """How a claim's `RETURNING` list becomes instances without the ORM's per-row work
    (`config.db.fresh.Columns`), or None for a model with fields that convert what they read
    (the claim then goes through `raw`)."""
    if model not in _RETURNED:
        try:
            table = connection.ops.quote_name(model._meta.db_table)
            _RETURNED[model] = Columns(model, table)
        except TypeError:
            _RETURNED[model] = None
    return _RETURNED[model]


def _column(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field.get_attname_column()[1]


def _partition_key(table: str) -> str | None:
    """The time column `table` is partitioned by, if it is declared partitioned."""
    for declared in partitioned_tables():
        if declared.table == table:
            return declared.column
    return None


def partition_filter(model: type[models.Model], items: Sequence[models.Model]) -> dict[str, Any]:
    """A filter on the values the items hold of their table's partition key (when it is
    partitioned by time; else none): a statement that finds the items by key with it
    looks in their partitions alone, not in each partition's primary key index."""
    column = _partition_key(model._meta.db_table)
    if column is None:
        return {}
    field = next(field for field in model._meta.concrete_fields if field.column == column)
    return {f"{field.name}__in": {getattr(item, field.attname) for item in items}}


def rows_claim(
    model: type[T],
    *,
    limit: int,
    now: dt.datetime,
    token: uuid.UUID,
    lease_until: dt.datetime,
    label: str,
) -> list[T]:
    """Due rows, then expired leases: each one `UPDATE ... RETURNING` of the rows
    `SELECT ... FOR UPDATE SKIP LOCKED` picked, so the claim and the load are one
    round trip."""
    meta, quote = model._meta, connection.ops.quote_name
    assert meta.pk is not None
    table, pk = quote(meta.db_table), quote(meta.pk.column)
    column = {name: quote(_column(model, name)) for name in _KIT_COLUMNS}
    # A table partitioned by time: the rows picked are found again by their partition key
    # too, each in its own partition (by `id` alone, in every partition's primary key).
    partition_key = _partition_key(meta.db_table)
    picked = f"{pk}, {quote(partition_key)}" if partition_key else pk
    found = (
        f" AND {table}.{quote(partition_key)} = picked.{quote(partition_key)}"
        if partition_key
        else ""
    )
    claim = (
        # S608: names from the model.
        f"WITH picked AS (SELECT {picked} FROM {table} WHERE {{where}} "  # noqa: S608
        f"ORDER BY {{order}} LIMIT %s FOR UPDATE SKIP LOCKED) "
        f"UPDATE {table} SET {column['status']} = %s, "
        f"{column['attempts']} = {table}.{column['attempts']} + 1, "
        f"{column['claim_token']} = %s, {column['lease_expires_at']} = %s{{extra}} "
        f"FROM picked WHERE {table}.{pk} = picked.{pk}{found} RETURNING {{returning}}"
    )
    claimed = [WorkStatus.PROCESSING.value, token, lease_until]
    due = _claimed(
        model,
        claim.format(
            where=f"{column['status']} IN (%s, %s) AND {column['next_attempt_at']} <= %s",
            order=column["next_attempt_at"],
            extra="",
            returning="{returning}",
        ),
        [*DUE_STATUSES, now, limit, *claimed],
    )
    if len(due) >= limit:
        return due
    lost = _claimed(
        model,
        claim.format(
            where=f"{column['status']} = %s AND {column['lease_expires_at']} <= %s",
            order=column["lease_expires_at"],
            extra=f", {column['last_error']} = %s, {column['error_code']} = %s",
            returning="{returning}",
        ),
        [
            WorkStatus.PROCESSING.value,
            now,
            limit - len(due),
            *claimed,
            str(WorkerLost.__doc__),
            WorkerLost.code,
        ],
    )
    if lost:
        logger.warning("Reclaiming %d %s whose worker stopped", len(lost), label)
    return due + lost


def _claimed(model: type[T], sql: str, params: list[Any]) -> list[T]:
    """The rows a claim statement (`sql`, its `RETURNING` list left as `{returning}`)
    marked, as instances: read in binary and made without `Model.__init__` (a claim
    of 500 rows through `raw` cost more Python than the rest of the claim), or through
    `raw` for a model whose fields convert what they read."""
    columns = _returned(model)
    if columns is None:
        table = connection.ops.quote_name(model._meta.db_table)
        return list(model._default_manager.raw(sql.format(returning=f"{table}.*"), params))
    rows = rows_fetch(sql.format(returning=columns.select).replace("%s", "%b"), params)
    return columns.make_all(rows)
