"""Database helpers that know no app."""

from typing import Any

import psycopg
from django.db import connection


def binary_cursor() -> psycopg.Cursor[Any]:
    """A cursor on Django's own connection (so in its transaction) that binds parameters
    on the server: with `%b` placeholders, arrays travel in binary, without the per-element
    quoting of the text format, which costs more than the statement for arrays of
    thousands of JSON texts (bulk reads and writes of contacts, import rows)."""
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)
