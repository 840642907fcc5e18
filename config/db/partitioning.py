"""Turning a table into one partitioned by time, and back: what a family's migration runs
(`RunPython`) to convert a table that already holds rows.

The conversion copies: the table is renamed aside, a partitioned table of the same name,
columns, defaults and checks is made, with partitions covering its rows' range and the
ones ahead (`config.db.partitions.partitions_make`), the rows are copied in, the old table
is dropped, and its indexes and foreign keys are made again, under their own names, on
the partitioned table (as partitioned indexes: each partition has its own). The primary
key becomes (key, time column): PostgreSQL requires the partition key in every unique
index. Unique indexes other than the primary key cannot be kept (the family replaces
them first, or the conversion stops). It runs in the migration's transaction, holding
the table's lock while it copies: a large table needs a window for it.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.db.backends.base.schema import BaseDatabaseSchemaEditor

from config.db.partitions import partitions_make
from config.runtime import clock

# Index and foreign key definitions of a table (not the primary key's index, which is
# made anew), as PostgreSQL writes them.
_INDEXES = (
    "SELECT i.relname, pg_get_indexdef(x.indexrelid), x.indisunique "
    "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
    "WHERE x.indrelid = to_regclass(%s) AND NOT x.indisprimary ORDER BY 1"
)
_FOREIGN_KEYS = (
    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE conrelid = to_regclass(%s) AND contype = 'f' ORDER BY 1"
)
_REFERENCED = (
    "SELECT conname FROM pg_constraint WHERE confrelid = to_regclass(%s) AND contype = 'f'"
)
_COLUMNS = (
    "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) "
    "AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
)
_PRIMARY_KEY = (
    "SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(%s) AND contype = 'p'"
)


def _rows(editor: BaseDatabaseSchemaEditor, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with editor.connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows: list[tuple[Any, ...]] = cursor.fetchall()
    return rows


def _definitions(
    editor: BaseDatabaseSchemaEditor, table: str
) -> tuple[list[str], list[tuple[str, str]], str]:
    """The table's index statements (each naming the table as `{table}`), its foreign keys
    (name, definition) and its primary key's name."""
    indexes = []
    for name, definition, unique in _rows(editor, _INDEXES, [table]):
        if unique:
            raise ValueError(
                f"The unique index {name} of {table} cannot stay on a table partitioned by "
                "time: replace it before the conversion."
            )
        # `CREATE INDEX name ON [ONLY] [schema.]table USING ...`
        statement = re.sub(r" ON (ONLY )?\S+ USING ", " ON {table} USING ", definition, count=1)
        indexes.append(statement)
    keys = [(name, definition) for name, definition in _rows(editor, _FOREIGN_KEYS, [table])]
    primary = _rows(editor, _PRIMARY_KEY, [table])
    return indexes, keys, primary[0][0] if primary else f"{table}_pkey"


def _rebuilt(
    editor: BaseDatabaseSchemaEditor,
    *,
    table: str,
    aside: str,
    partition_by: str | None,
    primary_key: list[str],
    now: dt.datetime | None = None,
    storage: str = "",
) -> None:
    """Makes `table` anew (partitioned by `partition_by`, or plain) from the table renamed
    `aside`: same columns, rows, indexes and foreign keys; primary key `primary_key`;
    `storage` its storage parameters (each partition's, when partitioned)."""
    quote = editor.quote_name
    if _rows(editor, _REFERENCED, [table]):
        raise ValueError(f"Foreign keys point at {table}: they must go before it is rebuilt.")
    indexes, keys, primary_name = _definitions(editor, table)
    # Checks of deferred foreign keys still pending on rows written earlier in the
    # transaction run now: a table with pending checks cannot be altered.
    editor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    editor.execute(f"ALTER TABLE {quote(table)} RENAME TO {quote(aside)}")
    for name, _ in keys:
        editor.execute(f"ALTER TABLE {quote(aside)} DROP CONSTRAINT {quote(name)}")
    partitioning = f" PARTITION BY RANGE ({quote(partition_by)})" if partition_by else ""
    # A partitioned table has no storage parameters of its own: its partitions have them.
    options = f" WITH ({storage})" if storage and not partition_by else ""
    editor.execute(
        f"CREATE TABLE {quote(table)} (LIKE {quote(aside)} INCLUDING DEFAULTS "
        f"INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS){partitioning}{options}"
    )
    columns = ", ".join(quote(name) for (name,) in _rows(editor, _COLUMNS, [table]))
    if partition_by:
        first = _rows(
            editor,
            f"SELECT min({quote(partition_by)}) FROM {quote(aside)}",  # noqa: S608
            [],
        )[0][0]
        # Every interval from the oldest row's to the ones ahead has its partition before
        # the rows are copied, so each row goes to its own.
        partitions_make(table, partition_by, now=now or clock.now(), since=first, storage=storage)
    editor.execute(
        f"INSERT INTO {quote(table)} ({columns}) "  # noqa: S608 (names from the catalog)
        f"SELECT {columns} FROM {quote(aside)}"
    )
    editor.execute(f"DROP TABLE {quote(aside)}")
    if partition_by:
        # A row the partitions made did not cover (stamped after `now`) has its own now.
        partitions_make(table, partition_by, now=now or clock.now(), storage=storage)
    editor.execute(
        f"ALTER TABLE {quote(table)} ADD CONSTRAINT {quote(primary_name)} "
        f"PRIMARY KEY ({', '.join(quote(column) for column in primary_key)})"
    )
    for statement in indexes:
        editor.execute(statement.format(table=quote(table)))
    for name, definition in keys:
        editor.execute(f"ALTER TABLE {quote(table)} ADD CONSTRAINT {quote(name)} {definition}")


def table_partition(
    editor: BaseDatabaseSchemaEditor,
    *,
    table: str,
    column: str,
    key: str = "id",
    now: dt.datetime | None = None,
    storage: str = "",
) -> None:
    """Converts `table` into a table partitioned by range of `column` with its rows, its
    indexes and foreign keys; its primary key becomes (`key`, `column`). `storage`: the
    partitions' storage parameters (the family's `PartitionedTable.storage`)."""
    _rebuilt(
        editor,
        table=table,
        aside=f"{table}__plain",
        partition_by=column,
        primary_key=[key, column],
        now=now,
        storage=storage,
    )


def table_unpartition(
    editor: BaseDatabaseSchemaEditor, *, table: str, key: str = "id", storage: str = ""
) -> None:
    """The reverse of `table_partition`: a plain table with the rows of every partition,
    the same indexes and foreign keys, the primary key (`key`) and `storage`."""
    _rebuilt(
        editor,
        table=table,
        aside=f"{table}__partitioned",
        partition_by=None,
        primary_key=[key],
        storage=storage,
    )
