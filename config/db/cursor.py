"""Database helpers that know no app."""

from typing import Any

import psycopg
from django.conf import settings
from django.db import connection


def binary_cursor() -> psycopg.Cursor[Any]:
    """A cursor on Django's own connection (so in its transaction) that binds parameters
    on the server: with `%b` placeholders, arrays travel in binary, without the per-element
    quoting of the text format, which costs more than the statement for arrays of
    thousands of JSON texts (bulk reads and writes of contacts, import rows)."""
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


def server_sessions() -> bool:
    """Whether a database connection stays one server session from one transaction to the
    next, so what a transaction leaves on it (a prepared statement, a session setting) is
    there for the next. Not behind a pooler in transaction mode (DATABASE_POOLER), which
    may run each transaction on another server connection."""
    return bool(settings.DATABASE_POOLER != "transaction")
