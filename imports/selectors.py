"""Reads of imports and of their stored rows."""

import json
import uuid
from dataclasses import dataclass

from django.db import connection
from django.db.models import QuerySet

from imports.models import Import, ImportChunk, ImportRow
from tenancy.models import Project


def import_list(*, project: Project) -> QuerySet[Import]:
    return Import.objects.filter(project=project)


def import_get(*, project: Project, import_id: uuid.UUID | str) -> Import | None:
    return import_list(project=project).filter(id=import_id).first()


def import_chunks(*, record: Import) -> QuerySet[ImportChunk]:
    """The import's chunks in row order."""
    return ImportChunk.objects.filter(import_record=record).order_by("first_row")


@dataclass(slots=True)
class StoredRow:
    """An import row as planning reads it; `fields_json` stays text until needed."""

    row_number: int
    status: str
    error_code: str | None
    email: str | None
    external_id: str | None
    fields_json: str
    audiences: list[str]
    topics: list[str]


_ROWS_SQL = """
SELECT row_number, status, error_code, email, external_id, fields::text, audiences::text,
       topics::text
FROM {table}
WHERE import_id = %s AND row_number BETWEEN %s AND %s
ORDER BY row_number
"""


def import_rows_between(*, record: Import, first: int, last: int) -> list[StoredRow]:
    """The import's rows numbered `first` to `last`, in order, in one query."""
    with connection.cursor() as cursor:
        cursor.execute(_ROWS_SQL.format(table=ImportRow._meta.db_table), [record.id, first, last])
        rows = cursor.fetchall()
    return [
        StoredRow(
            row_number=number,
            status=status,
            error_code=error_code,
            email=email,
            external_id=external_id,
            fields_json=fields,
            audiences=json.loads(audiences) if audiences != "[]" else [],
            topics=json.loads(topics) if topics != "[]" else [],
        )
        for number, status, error_code, email, external_id, fields, audiences, topics in rows
    ]
