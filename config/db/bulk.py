"""Writing many rows of one model in one statement, whatever their number.

Each column's values travel as one array bound on the server (binary, no per-element
quoting on the client) and the statement reads them back with `unnest`, so it is the same
size for 1 row or 500: `INSERT ... SELECT FROM unnest(...)` and `UPDATE ... FROM
unnest(...)`.
"""

from __future__ import annotations

import functools
import json
import operator
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from psycopg import pq

from config.db.cursor import server_sessions, statement_cursor

M = TypeVar("M", bound=models.Model)
_TUPLES_OK = pq.ExecStatus.TUPLES_OK
# A statement's parameters: in order, or by name.
Params = Sequence[Any] | Mapping[str, Any]


def _execute(
    sql: str, params: Params, *, binary: bool = False, prepare: bool | None = None
) -> list[tuple[Any, ...]]:
    """Runs `sql` (with `%b` placeholders) on a cursor of Django's connection, so in its
    transaction, that binds on the server; as Django's own cursors do, through the
    connection's execute wrappers, into its query log when that is on (statement
    counts in tests see it), and raising Django's errors (`IntegrityError`). With
    `binary`, results come in binary too (see `rows_fetch`); `prepare` as psycopg's, and
    never behind a pooler in transaction mode (the statement would be prepared on one
    server connection and run on another)."""
    if prepare and not server_sessions():
        prepare = None
    # This thread's connection, looked up once: each attribute read through Django's
    # `connection` proxy looks it up again.
    db = connections[DEFAULT_DB_ALIAS]
    with db.wrap_database_errors:
        cursor = statement_cursor(db)
        started = time.monotonic()
        wrappers = db.execute_wrappers
        if wrappers:

            def execute(sql: str, params: Any, many: bool, context: dict[str, Any]) -> None:
                cursor.execute(sql, params, binary=binary, prepare=prepare)

            run = functools.reduce(
                lambda inner, wrapper: functools.partial(wrapper, inner), wrappers, execute
            )
            run(sql, params, False, {"connection": db, "cursor": cursor})
        else:
            cursor.execute(sql, params, binary=binary, prepare=prepare)
        # Whether it returned rows, read off the result: `description` would make a column
        # object per column to say the same.
        result = cursor.pgresult
        returned = result is not None and (result.nfields or result.status == _TUPLES_OK)
        rows = cursor.fetchall() if returned else []
    if db.queries_logged:
        db.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
    return rows


def statement_run(
    sql: str, params: Params, *, prepare: bool | None = None
) -> list[tuple[Any, ...]]:
    """Runs one statement (`%b` placeholders, or named ones with a mapping) bound on the
    server, so its arrays travel in binary without the per-element quoting of Django's
    client-side binding; returns its rows (`RETURNING`), if any. As `rows_insert`, in
    Django's transaction, query log and error types. With `prepare`, the statement is
    prepared on the server at its first run on the connection and reused after (Django
    leaves preparing off by default, for connection poolers in transaction mode; so does
    DATABASE_POOLER=transaction)."""
    return _execute(sql, params, prepare=prepare)


def rows_fetch(sql: str, params: Params, *, prepare: bool | None = None) -> list[tuple[Any, ...]]:
    """The rows of a query (`%b` placeholders) in binary, on PostgreSQL: timestamps, UUIDs
    and JSON arrive as Python values without the text parsing of each one (`jsonb`
    parsed, unlike Django's text loader), which is most of the cost of reading thousands
    of rows. As `rows_insert`, in Django's transaction, query log and error types;
    `prepare` as `statement_run`'s."""
    return _execute(sql, params, binary=True, prepare=prepare)


def _array_of(field: models.Field[Any, Any]) -> tuple[str, str]:
    """The array type a column's values travel as, and how the statement reads one back:
    JSON as text (the field's own encoder writes it) cast to the column's type."""
    column = connection.ops.quote_name(field.column)
    if isinstance(field, models.JSONField):
        return "text[]", f"v.{column}::{field.db_type(connection)}"
    # A foreign key's type is its target's (`integer` for a serial key).
    return f"{field.db_type(connection)}[]", f"v.{column}"


# Fields whose Python value psycopg sends as it is, on PostgreSQL: Django's preparation
# of them only checks and converts what the model already holds, and skipping it is most
# of the cost of building a large batch's arrays. Exact types: a subclass may prepare
# its values for real (encryption at rest).
_AS_IS = frozenset(
    {
        models.CharField,
        models.TextField,
        models.UUIDField,
        models.IntegerField,
        models.PositiveIntegerField,
        models.BigIntegerField,
        models.BooleanField,
        models.DateTimeField,
        models.ForeignKey,
        models.OneToOneField,
    }
)


def _reader(field: models.Field[Any, Any], *, adding: bool) -> Callable[[models.Model], Any]:
    """How to read one column's value off an instance, ready for its array."""
    attname = field.attname
    if isinstance(field, models.JSONField):
        encoder = field.encoder

        def as_json(instance: models.Model) -> Any:
            value = getattr(instance, attname)
            return None if value is None else json.dumps(value, cls=encoder)

        return as_json
    automatic = isinstance(field, models.DateField) and (field.auto_now or field.auto_now_add)
    if type(field) in _AS_IS and not automatic:
        return operator.attrgetter(attname)

    def prepared(instance: models.Model) -> Any:
        value = field.pre_save(instance, adding) if adding else getattr(instance, attname)
        return field.get_db_prep_save(value, connection)

    return prepared


def _fields(model: type[models.Model], names: Iterable[str]) -> list[models.Field[Any, Any]]:
    fields = []
    for name in names:
        field = model._meta.get_field(name)
        assert isinstance(field, models.Field)
        fields.append(field)
    return fields


def rows_insert(
    model: type[M],
    instances: Sequence[M],
    *,
    skip_conflicts: bool = False,
    returning: str | None = None,
) -> set[Any]:
    """Inserts the instances; returns the values of `returning` (a field name; default the
    primary key, which the caller then sets) of the rows inserted. Keys the database numbers
    itself are left to it. With `skip_conflicts`, a row that meets a unique key is left out
    (`ON CONFLICT DO NOTHING`, also between rows of the same call: the first one wins);
    without, it raises `IntegrityError` and nothing is inserted."""
    if not instances:
        return set()
    meta = model._meta
    assert meta.pk is not None
    fields = [f for f in meta.concrete_fields if not isinstance(f, models.AutoField)]
    [key] = _fields(model, [returning]) if returning is not None else [meta.pk]
    quote = connection.ops.quote_name
    types, reads, params = [], [], []
    for field in fields:
        array, read = _array_of(field)
        types.append(f"%s::{array}")
        reads.append(read)
        read_value = _reader(field, adding=True)
        params.append([read_value(instance) for instance in instances])
    names = ", ".join(quote(field.column) for field in fields)
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({names}) "  # noqa: S608 (names from the model)
        f"SELECT {', '.join(reads)} FROM unnest({', '.join(types)}) AS v({names}) "
        f"{'ON CONFLICT DO NOTHING ' if skip_conflicts else ''}"
        f"RETURNING {quote(key.column)}"
    )
    inserted = {row[0] for row in _execute(sql.replace("%s", "%b"), params)}
    alias = connection.alias
    for instance in instances:
        if getattr(instance, key.attname) in inserted:
            instance._state.adding = False
            instance._state.db = alias
    return inserted


def rows_update(
    model: type[M], instances: Sequence[M], names: Sequence[str], *, match: Sequence[str] = ()
) -> None:
    """Writes the named fields of each instance to its row, by primary key, in one
    statement. The caller holds the rows (or what guards them) locked. `match` names more
    fields the rows are found by too: a table partitioned by time names its partition key,
    so each row is looked for in its own partition only."""
    if not instances:
        return
    meta = model._meta
    assert meta.pk is not None
    quote = connection.ops.quote_name
    pk = meta.pk
    fields = _fields(model, names)
    pk_array, _ = _array_of(pk)
    types = [f"%s::{pk_array}"]
    params: list[Any] = [[pk.get_db_prep_value(instance.pk, connection) for instance in instances]]
    sets = []
    for field in fields:
        array, read = _array_of(field)
        types.append(f"%s::{array}")
        sets.append(f"{quote(field.column)} = {read}")
        read_value = _reader(field, adding=False)
        params.append([read_value(instance) for instance in instances])
    keys = _fields(model, match)
    wheres = []
    for number, field in enumerate(keys):
        array, _ = _array_of(field)
        types.append(f"%s::{array}")
        wheres.append(f" AND {quote(meta.db_table)}.{quote(field.column)} = v._match{number}")
        read_value = _reader(field, adding=False)
        params.append([read_value(instance) for instance in instances])
    aliases = ", ".join(
        ["_pk", *(quote(field.column) for field in fields)]
        + [f"_match{number}" for number in range(len(keys))]
    )
    table = quote(meta.db_table)
    sql = (
        f"UPDATE {table} SET {', '.join(sets)} "  # noqa: S608 (names from the model)
        f"FROM unnest({', '.join(types)}) AS v({aliases}) "
        f"WHERE {table}.{quote(pk.column)} = v._pk{''.join(wheres)}"
    )
    _execute(sql.replace("%s", "%b"), params)
