"""Reads of imports and of their stored rows."""

import json
import uuid
from typing import NamedTuple

from django.db.models import QuerySet

from config.db.cursor import binary_cursor
from imports.models import Import, ImportChunk, ImportRow
from tenancy.models import Project


def import_list(*, project: Project) -> QuerySet[Import]:
    return Import.objects.filter(project=project)


def import_get(*, project: Project, import_id: uuid.UUID | str) -> Import | None:
    return import_list(project=project).filter(id=import_id).first()


def import_chunks(*, record: Import) -> QuerySet[ImportChunk]:
    """The import's chunks in row order."""
    return ImportChunk.objects.filter(import_record=record).order_by("first_row")


class StoredRow(NamedTuple):
    """An import row as planning reads it; `fields_json` stays text until needed. A tuple
    of strings and numbers: planning holds a chunk of them at once, and the cyclic
    collector stops tracking such tuples after one look (a dataclass stays tracked)."""

    row_number: int
    status: str
    error_code: str | None
    email: str | None
    external_id: str | None
    fields_json: str
    audiences: tuple[str, ...]
    topics: tuple[str, ...]


_ROWS_SQL = """
SELECT row_number, status, error_code, email, external_id, fields::text,
       CASE WHEN audiences = '[]'::jsonb THEN NULL ELSE audiences::text END,
       CASE WHEN topics = '[]'::jsonb THEN NULL ELSE topics::text END
FROM {table}
WHERE import_id = %b AND row_number BETWEEN %b AND %b
ORDER BY row_number
"""


def import_rows_between(*, record: Import, first: int, last: int) -> list[StoredRow]:
    """The import's rows numbered `first` to `last`, in order, in one query."""
    with binary_cursor() as cursor:
        cursor.execute(_ROWS_SQL.format(table=ImportRow._meta.db_table), [record.id, first, last])
        rows = cursor.fetchall()
    return [
        StoredRow(
            number,
            status,
            error_code,
            email,
            external_id,
            fields,
            () if audiences is None else tuple(json.loads(audiences)),
            () if topics is None else tuple(json.loads(topics)),
        )
        for number, status, error_code, email, external_id, fields, audiences, topics in rows
    ]
