"""Bulk writes for hot paths: PostgreSQL COPY of many rows in one round trip, and array
literals for `unnest` and `= ANY`.

`bulk_create` builds a model instance, prepares every value through its field and sends
an INSERT with one bound parameter per value: for the thousands of rows of one campaign
fan-out batch that costs more than the rendering. Here each column gets a formatter
chosen once from its field's type, and rows travel as COPY text.
"""

import datetime as dt
import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models

NULL = "\\N"


def _escaped(text: str) -> str:
    """`text` as a COPY text-format field (backslash, tab, newline, carriage return)."""
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if "\t" in text:
        text = text.replace("\t", "\\t")
    if "\n" in text:
        text = text.replace("\n", "\\n")
    if "\r" in text:
        text = text.replace("\r", "\\r")
    return text


class RawJson(str):
    """A value already serialised as JSON, for a JSON column: written as it is."""


def _json(value: Any) -> str:
    if isinstance(value, RawJson):
        return _escaped(value)
    return _escaped(json.dumps(value, cls=DjangoJSONEncoder, separators=(",", ":")))


def _datetime(value: dt.datetime) -> str:
    return value.isoformat()


def _plain(value: Any) -> str:
    return str(value)


def _boolean(value: bool) -> str:
    return "t" if value else "f"


def _formatter(field: "models.Field[Any, Any]") -> Callable[[Any], str]:
    if isinstance(field, models.JSONField):
        return _json
    if isinstance(field, models.DateTimeField):
        return _datetime
    if isinstance(field, models.BooleanField):
        return _boolean
    if isinstance(field, models.UUIDField | models.IntegerField | models.ForeignKey):
        return _plain
    return lambda value: _escaped(str(value))


def copy_insert(
    model: type[models.Model],
    fields: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    constants: Mapping[str, Any] | None = None,
) -> int:
    """Inserts `rows` (values in the order of `fields`, model field names; None is NULL)
    into the model's table with one COPY, in the caller's transaction; returns the count.
    `constants` are columns with one value for every row, formatted once. Columns left
    out take their database default, so name every NOT NULL one."""
    meta = model._meta
    columns: list[str] = []
    formats: list[Callable[[Any], str]] = []
    for name in fields:
        field = meta.get_field(name)
        assert isinstance(field, models.Field)
        columns.append(connection.ops.quote_name(field.column))
        formats.append(_formatter(field))
    tail = ""
    for name, value in (constants or {}).items():
        field = meta.get_field(name)
        assert isinstance(field, models.Field)
        columns.append(connection.ops.quote_name(field.column))
        tail += "\t" + (NULL if value is None else _formatter(field)(value))
    if not formats:
        tail = tail[1:]
    lines = []
    for row in rows:
        lines.append(
            "\t".join(
                NULL if value is None else fmt(value)
                for fmt, value in zip(formats, row, strict=True)
            )
            + tail
        )
    if not lines:
        return 0
    data = ("\n".join(lines) + "\n").encode()
    table = connection.ops.quote_name(meta.db_table)
    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    started = time.monotonic()
    # Django's errors (`IntegrityError`) as its own cursors raise them.
    with connection.wrap_database_errors, connection.cursor() as cursor:
        raw = cursor.cursor  # the driver's cursor: Django's wrapper has no COPY
        with raw.copy(sql) as copy:
            copy.write(data)
    # Into Django's query log when that is on, so statement counts in tests see it.
    if connection.queries_logged:
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
    return len(lines)


def array_literal(values: Iterable[str | uuid.UUID]) -> str:
    """A PostgreSQL array literal of texts (`{"a","b"}`), bound as one string parameter
    and cast in SQL (`%s::uuid[]`): far cheaper to send than a bound list."""
    quoted = ('"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"' for value in values)
    return "{" + ",".join(quoted) + "}"
