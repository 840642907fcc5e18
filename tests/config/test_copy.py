"""COPY inserts and array literals: whatever text or JSON a row holds comes back as it
was written."""

import datetime as dt
import uuid

import pytest
from django.db import connection

from config.db.copy import RawJson, array_literal, copy_insert
from contacts.models import Contact
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

AWKWARD = 'tab\there\nnew line\r\nback\\slash "quoted" \\N é 😀'


def test_copied_rows_read_back_exactly():
    project = ProjectFactory()
    now = dt.datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
    plain, raw, empty = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    rows = [
        (plain, project.pk, AWKWARD, {"note": AWKWARD, "n": 1.5, "list": [None]}, now, now),
        (raw, project.pk, None, RawJson('{"kept": "as\\tgiven"}'), now, now),
        (empty, project.pk, "", {}, now, now),
    ]

    count = copy_insert(
        Contact, ("id", "project", "external_id", "fields", "created_at", "updated_at"), rows
    )

    assert count == 3
    stored = {c.pk: c for c in Contact.objects.filter(project=project)}
    assert stored[plain].external_id == AWKWARD
    assert stored[plain].fields == {"note": AWKWARD, "n": 1.5, "list": [None]}
    assert stored[plain].created_at == now
    assert stored[raw].external_id is None
    assert stored[raw].fields == {"kept": "as\tgiven"}
    assert stored[empty].external_id == ""
    assert stored[plain].email is None


def test_no_rows_is_no_statement(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert copy_insert(Contact, ("id",), []) == 0


def test_array_literals_carry_any_text():
    values = [AWKWARD, "", "a,b", "{braces}", "NULL", str(uuid.UUID(int=7))]

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT v FROM unnest(%s::text[]) WITH ORDINALITY AS t(v, n) ORDER BY n",
            [array_literal(values)],
        )
        assert [row[0] for row in cursor.fetchall()] == values
