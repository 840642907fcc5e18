"""Bulk writes (config/db/bulk.py): one statement for any number of rows, unique keys met as
the caller asks, Django's errors and its query log."""

import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from config.db.bulk import rows_insert, rows_update, statement_run
from config.runtime import clock
from events.models import Event, EventKey
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def events(project, count: int, *, key: str | None = None, **extra) -> list[Event]:
    now = clock.now()
    return [
        Event(
            id=uuid.uuid4(),
            project=project,
            event="bulk.item",
            payload={"n": n, "nested": {"ok": True}},
            occurred_at=now,
            next_attempt_at=now,
            created_at=now,
            idempotency_key=f"{key}-{n}" if key else None,
            **extra,
        )
        for n in range(count)
    ]


def test_many_rows_are_inserted_in_one_statement_with_their_values_as_given():
    project = ProjectFactory()
    rows = events(project, 30, email="a@example.com")
    with CaptureQueriesContext(connection) as captured:
        inserted = rows_insert(Event, rows)
    assert len(captured.captured_queries) == 1
    assert inserted == {row.id for row in rows}
    stored = Event.objects.get(id=rows[7].id)
    assert (stored.payload, stored.email, stored.external_id) == (
        {"n": 7, "nested": {"ok": True}},
        "a@example.com",
        None,
    )
    assert stored.occurred_at == rows[7].occurred_at
    assert not rows[7]._state.adding


def keys(project, names: list[str]) -> list[EventKey]:
    """Rows of a plain table with a unique key: (project, idempotency key)."""
    now = clock.now()
    return [
        EventKey(event_id=uuid.uuid4(), project=project, idempotency_key=name, created_at=now)
        for name in names
    ]


def test_rows_that_meet_a_unique_key_are_left_out_when_asked_the_first_of_a_call_winning():
    project = ProjectFactory()
    rows_insert(EventKey, keys(project, ["k-0", "k-1"]))
    again = keys(project, ["k-0", "k-1", "k-2"])
    twin = keys(project, ["k-2"])[0]  # the same key as again[2], later in the call
    inserted = rows_insert(EventKey, [*again, twin], skip_conflicts=True)
    assert inserted == {again[2].event_id}
    assert EventKey.objects.filter(project=project).count() == 3
    assert EventKey.objects.get(idempotency_key="k-2").event_id == again[2].event_id


def test_a_unique_key_met_raises_django_s_integrity_error_and_inserts_nothing():
    project = ProjectFactory()
    rows_insert(EventKey, keys(project, ["dup"]))
    with pytest.raises(IntegrityError), transaction.atomic():
        rows_insert(EventKey, keys(project, ["fresh", "dup"]))
    assert EventKey.objects.filter(project=project).count() == 1


def test_an_insert_can_return_another_column_than_the_key():
    project = ProjectFactory()
    rows = events(project, 3, key="r")
    assert rows_insert(Event, rows, returning="idempotency_key") == {"r-0", "r-1", "r-2"}


def test_many_rows_are_updated_in_one_statement_each_with_its_own_values():
    project = ProjectFactory()
    rows = events(project, 20)
    rows_insert(Event, rows)
    for n, row in enumerate(rows):
        row.payload = {"n": n, "changed": True} if n % 2 else ["listed", n]
        row.email = f"u{n}@example.com" if n % 2 else None
        row.last_error = "not written"
    with CaptureQueriesContext(connection) as captured:
        rows_update(Event, rows, ["payload", "email"])
    assert len(captured.captured_queries) == 1
    stored = {row.id: row for row in Event.objects.filter(project=project)}
    assert stored[rows[3].id].payload == {"n": 3, "changed": True}
    assert stored[rows[3].id].email == "u3@example.com"
    assert (stored[rows[4].id].payload, stored[rows[4].id].email) == (["listed", 4], None)
    assert stored[rows[4].id].last_error == ""


def test_a_statement_asked_to_be_prepared_is_and_others_are_not():
    def prepared() -> list[str]:
        sql = "SELECT array_agg(statement) FROM pg_prepared_statements"
        [[statements]] = statement_run(sql, [])
        return statements or []

    asked = "SELECT %(n)s::int + 1 AS asked"
    for n in range(3):
        assert statement_run(asked, {"n": n}, prepare=True) == [(n + 1,)]
        assert statement_run("SELECT %b::int + 2 AS not_asked", [n]) == [(n + 2,)]
    assert [text for text in prepared() if "asked" in text] == ["SELECT $1::int + 1 AS asked"]


def test_behind_a_transaction_pooler_a_statement_asked_to_be_prepared_is_not(settings):
    settings.DATABASE_POOLER = "transaction"
    asked = "SELECT %(n)s::int + 3 AS asked_behind_a_pooler"
    for n in range(3):
        assert statement_run(asked, {"n": n}, prepare=True) == [(n + 3,)]
    sql = "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %b"
    assert statement_run(sql, ["%asked_behind_a_pooler%"]) == [(0,)]
