"""A COMMIT that PostgreSQL itself refuses, for the work-queue tests: a deferred constraint
trigger on a queue's table, checked at the commit of every transaction that updated a row
of it, raises when the row was set to a status the test named for it. The error is a
real one of the server at COMMIT: a serialization failure (`40001`), a deadlock
(`40P01`), a constraint (`23514`), or the connection itself terminated (`terminate`).

Only for transactional tests (`django_db(transaction=True)`): inside a test's transaction
the batch's transaction is a savepoint and nothing is checked at its end."""

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection

# The errors a test may ask for, by SQLSTATE (or `terminate`: the backend ends itself).
SERIALIZATION_FAILURE = "40001"
DEADLOCK = "40P01"
CHECK_VIOLATION = "23514"
TERMINATE = "terminate"

_SETUP = """
CREATE TABLE workqueue_test_refused (
    tbl text NOT NULL, id text NOT NULL, status text NOT NULL, errcode text NOT NULL,
    times integer
);
-- Counts the refusals of a limited one outside any transaction (a sequence does not roll
-- back with the transaction it refused).
CREATE SEQUENCE workqueue_test_refusals;
CREATE FUNCTION workqueue_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    refusal record;
BEGIN
    SELECT r.errcode, r.times INTO refusal FROM workqueue_test_refused r
    WHERE r.tbl = TG_ARGV[0] AND r.id = to_jsonb(NEW) ->> TG_ARGV[1]
        AND r.status = NEW.status;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF refusal.times IS NOT NULL AND nextval('workqueue_test_refusals') > refusal.times THEN
        RETURN NULL;
    END IF;
    IF refusal.errcode = 'terminate' THEN
        PERFORM pg_terminate_backend(pg_backend_pid());
        PERFORM pg_sleep(5);
    END IF;
    RAISE EXCEPTION 'refused at commit by the test' USING ERRCODE = refusal.errcode;
END $$;
"""


class CommitRefusal:
    """Refuses the commit of transactions that set chosen rows of `table` to a status."""

    def __init__(self, table: str) -> None:
        self.table = table

    def refuse(
        self,
        keys: Iterable[Any],
        *,
        error: str = SERIALIZATION_FAILURE,
        statuses: Iterable[str] = ("processed",),
        times: int | None = None,
    ) -> None:
        """Refuses the commit that sets one of `keys` to one of `statuses`: every time, or
        the first `times` times (counted across the refusals that have a limit)."""
        with connection.cursor() as cursor:
            if times is not None:
                cursor.execute("SELECT setval('workqueue_test_refusals', 1, false)")
            for key in keys:
                for status in statuses:
                    cursor.execute(
                        "INSERT INTO workqueue_test_refused VALUES (%s, %s, %s, %s, %s)",
                        [self.table, str(key), status, error, times],
                    )

    def allow(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM workqueue_test_refused WHERE tbl = %s", [self.table])


@contextmanager
def commit_refusal(table: str, *, key: str = "id") -> Iterator[CommitRefusal]:
    """The trigger on `table` (whose primary key is the column `key`) for the duration,
    one table at a time; nothing is refused until `refuse` says so."""
    trigger = f"workqueue_test_refuse_{table}"
    with connection.cursor() as cursor:
        cursor.execute(_SETUP)
        cursor.execute(
            f"CREATE CONSTRAINT TRIGGER {trigger} AFTER UPDATE ON {table} "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            f"EXECUTE FUNCTION workqueue_test_refuse('{table}', '{key}')"
        )
    try:
        yield CommitRefusal(table)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
            cursor.execute("DROP FUNCTION workqueue_test_refuse()")
            cursor.execute("DROP TABLE workqueue_test_refused")
            cursor.execute("DROP SEQUENCE workqueue_test_refusals")
