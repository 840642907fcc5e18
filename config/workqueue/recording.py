"""The work-queue kit's outcomes: the done mark of a batch's rows (one `UPDATE ... FROM
unnest(...)`, checked against the claim's token unless the rows are held) and the
failure of one row (retried with backoff, or dead-lettered)."""

import datetime as dt
import logging
import uuid
from collections.abc import Callable
from typing import Any

from django.db import connection, models
from django.db.models import Case, Value, When

from config.db.bulk import statement_run
from config.runtime import clock
from config.workqueue.claiming import partition_filter
from config.workqueue.errors import WorkError
from config.workqueue.models import WorkStatus
from config.workqueue.policy import RetryPolicy
from config.workqueue.work import BatchOutcome, PerItem, T

# The kit logs under one name, its queue module's.
logger = logging.getLogger("config.workqueue.queue")

MAX_ERROR_LENGTH = 2000

# What a done row's kit columns become.
_DONE_COLUMNS: dict[str, Any] = {
    "status": WorkStatus.PROCESSED.value,
    "claim_token": None,
    "lease_expires_at": None,
    "next_attempt_at": None,
    "last_error": "",
    "error_code": "",
}


def rows_held(model: type[T], *, token: uuid.UUID, items: list[T]) -> set[Any]:
    """Locks the items' rows until the transaction ends; the keys of those the claim
    `token` still holds. Locked by key (and partition key) alone and checked here: a filter
    on status would let the planner pick the partial lease index, which a busy queue fills
    with dead entries faster than vacuum clears them."""
    return {
        pk
        for pk, status, holder in model._default_manager.select_for_update()
        .filter(pk__in=[item.pk for item in items], **partition_filter(model, items))
        .values_list("pk", "status", "claim_token")
        if status == WorkStatus.PROCESSING and holder == token
    }


def done_record(
    model: type[T], *, token: uuid.UUID, items: list[T], values: dict[str, Any], held: bool
) -> set[Any]:
    """Marks the items done; the keys of those marked. With `held`, the caller holds
    and checked them all (the re-lock); else only the rows this claim still holds are
    (their token is ours: a takeover gives a row a new one, and an outcome clears it)."""
    columns: dict[str, Any] = {**_DONE_COLUMNS, **values}
    if _in_one_update(columns):
        if held:
            _record_done_postgresql(model, items=items, columns=columns)
            return {item.pk for item in items}
        return _record_done_postgresql(model, items=items, columns=columns, token=token)
    for name, value in columns.items():
        if isinstance(value, PerItem):
            columns[name] = _per_item(model, name, value)
    keys = [item.pk for item in items]
    marked = set(keys)
    if not held:
        # Read, then written in the same transaction: the rows read are locked until
        # its end.
        marked = set(
            model._default_manager.select_for_update()
            .filter(pk__in=keys, status=WorkStatus.PROCESSING, claim_token=token)
            .filter(**partition_filter(model, items))
            .values_list("pk", flat=True)
        )
    model._default_manager.filter(
        pk__in=list(marked), status=WorkStatus.PROCESSING, claim_token=token
    ).filter(**partition_filter(model, items)).update(**columns)
    return marked


def _in_one_update(columns: dict[str, Any]) -> bool:
    """Whether `_record_done_postgresql` can write `columns` (values and `PerItem`s)."""
    return not any(hasattr(value, "resolve_expression") for value in columns.values())


def _record_done_postgresql(
    model: type[T], *, items: list[T], columns: dict[str, Any], token: uuid.UUID | None = None
) -> set[Any]:
    """One UPDATE ... FROM unnest(...): per-row values travel as arrays, so the
    statement is the same size for any batch (a CASE per column grows with it, and
    building it cost more than the rest of the batch's bookkeeping), bound on the
    server in binary (`config.db.bulk`): Django's client-side binding quoted each array
    element into the statement, which cost more than the update.

    With `token`, only the rows that claim still holds are updated; returns the keys
    of the rows updated (with `token`; else an empty set)."""
    meta, quote = model._meta, connection.ops.quote_name
    pk = meta.pk
    assert pk is not None
    keys = [item.pk for item in items]
    sets: list[str] = []
    set_params: list[Any] = []
    arrays: list[str] = [f"%b::{pk.db_type(connection)}[]"]
    array_params: list[Any] = [[pk.get_db_prep_value(key, connection) for key in keys]]
    names = ["pk"]
    for name, value in columns.items():
        column = meta.get_field(name)
        assert isinstance(column, models.Field)
        target = quote(column.get_attname_column()[1])
        if isinstance(value, PerItem):
            alias = f"v{len(names)}"
            names.append(alias)
            arrays.append(f"%b::{column.db_type(connection)}[]")
            array_params.append(
                [column.get_db_prep_save(value.values.get(key), connection) for key in keys]
            )
            sets.append(f"{target} = v.{alias}")
        else:
            sets.append(f"{target} = %b::{column.db_type(connection)}")
            set_params.append(column.get_db_prep_save(value, connection))
    table = quote(meta.db_table)
    # By key and, with `token`, the claim's token (a token is on a row only while the
    # claim that set it holds: claiming sets a new one, every outcome clears it). Never
    # by status, which could lead the planner to the partial lease index (see
    # `_run_batch`); and the token is joined from the arrays, not compared with a
    # constant: the statistics know the column as nearly all null, and the planner then
    # took a constant's match for one row and scanned the table.
    check = ""
    if token is not None:
        token_field = meta.get_field("claim_token")
        assert isinstance(token_field, models.Field)
        names.append("token")
        arrays.append(f"%b::{token_field.db_type(connection)}[]")
        array_params.append([token] * len(keys))
        check = (
            f" AND {table}.{quote(token_field.column)} = v.token "
            f"RETURNING {table}.{quote(pk.column)}"
        )
    # A table partitioned by time: its partition key's values too, so the rows are found
    # in their partitions alone (bound, so the plan names those partitions).
    within, within_params = "", []
    for name, values in partition_filter(model, items).items():
        field = meta.get_field(name.removesuffix("__in"))
        assert isinstance(field, models.Field)
        within = f" AND {table}.{quote(field.column)} = ANY(%b::{field.db_type(connection)}[])"
        within_params = [sorted(values)]
    sql = (
        f"UPDATE {table} SET {', '.join(sets)} "  # noqa: S608 (names from the model)
        f"FROM unnest({', '.join(arrays)}) AS v({', '.join(names)}) "
        f"WHERE {table}.{quote(pk.column)} = v.pk{within}{check}"
    )
    rows = statement_run(sql, [*set_params, *array_params, *within_params])
    return {pk.to_python(row[0]) for row in rows} if token is not None else set()


def _per_item(model: type[T], name: str, value: PerItem) -> Case:
    column = model._meta.get_field(name)
    if column.is_relation:
        # A relation named here is a forward foreign key (a column of this table), whose column
        # is its target's; get_field's union also holds reverse and generic relations.
        column = column.target_field  # type: ignore[union-attr]
    return Case(
        *[When(pk=pk, then=Value(each)) for pk, each in value.values.items()],
        # A concrete Field by the same reasoning as above.
        output_field=column,  # type: ignore[arg-type]
    )


def failure_record(
    model: type[T],
    retry_policy: Callable[[T], RetryPolicy],
    *,
    item: T,
    token: uuid.UUID,
    error: Exception,
    outcome: BatchOutcome,
) -> None:
    """Records a failed attempt: retried after the policy's backoff (at least the error's
    `retry_after`), or dead-lettered when it is permanent or the attempts are spent."""
    policy = retry_policy(item)
    if isinstance(error, WorkError):
        code, permanent = error.code[:64], error.permanent
    else:
        code, permanent = f"exception:{type(error).__name__}"[:64], False
        logger.warning(
            "%s %s failed on attempt %d",
            model._meta.verbose_name,
            item.pk,
            item.attempts,
            exc_info=error,
        )
    message = f"{type(error).__name__}: {error}"[:MAX_ERROR_LENGTH]
    dead = permanent or item.attempts >= policy.max_attempts
    next_attempt_at: dt.datetime | None = None
    if not dead:
        delay = policy.delay(item.attempts)
        asked = getattr(error, "retry_after", None)
        if asked is not None and asked > delay.total_seconds():
            delay = dt.timedelta(seconds=float(asked))
        next_attempt_at = clock.now() + delay
    marked = (
        model._default_manager.filter(pk=item.pk, status=WorkStatus.PROCESSING, claim_token=token)
        .filter(**partition_filter(model, [item]))
        .update(
            status=WorkStatus.DEAD_LETTERED if dead else WorkStatus.FAILED,
            next_attempt_at=next_attempt_at,
            claim_token=None,
            lease_expires_at=None,
            last_error=message,
            error_code=code,
        )
    )
    if not marked:
        # Taken over by another worker (without the re-lock, found only here).
        outcome.skipped += 1
    elif next_attempt_at is None:
        outcome.dead_lettered += 1
    else:
        outcome.failed += 1
        if outcome.next_retry_at is None or next_attempt_at < outcome.next_retry_at:
            outcome.next_retry_at = next_attempt_at
