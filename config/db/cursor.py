"""Database helpers that know no app."""

from typing import Any

import psycopg
from django.conf import settings
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper


def binary_cursor() -> psycopg.Cursor[Any]:
    """A cursor on Django's own connection (so in its transaction) that binds parameters
    on the server: with `%b` placeholders, arrays travel in binary, without the per-element
    quoting of the text format, which costs more than the statement for arrays of
    thousands of JSON texts (bulk reads and writes of contacts, import rows)."""
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


def statement_cursor(db: BaseDatabaseWrapper) -> psycopg.Cursor[Any]:
    """A cursor like `binary_cursor`'s on `db`'s connection (opened if need be), kept with
    that connection for its next statement: a new cursor starts with no adapters looked up
    for its parameters' types, which a statement run on every request pays each time.
    Django's connections belong to one thread each, so the cursor does too; it is made
    again when the connection is (a new psycopg connection)."""
    db.ensure_connection()
    raw = db.connection
    kept: psycopg.Cursor[Any] | None = getattr(db, _KEPT, None)
    if kept is None or kept.connection is not raw or kept.closed:
        kept = psycopg.Cursor(raw)
        setattr(db, _KEPT, kept)
    return kept


_KEPT = "_statement_cursor"


def server_sessions() -> bool:
    """Whether a database connection stays one server session from one transaction to the
    next, so what a transaction leaves on it (a prepared statement, a session setting) is
    there for the next. Not behind a pooler in transaction mode (DATABASE_POOLER), which
    may run each transaction on another server connection."""
    return bool(settings.DATABASE_POOLER != "transaction")
