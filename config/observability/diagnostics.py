"""What the service tells about itself when something fails: logs and Django's debug page
carry no connection URLs and no rows' data."""

import logging
import re
from collections.abc import Iterator

import psycopg
from django.db import Error as DjangoDatabaseError
from django.views.debug import SafeExceptionReporterFilter

# PostgreSQL error classes whose primary message names only schema objects (constraints,
# tables, columns); others (22 data exceptions: "invalid input syntax for type uuid:
# "<value>"") may quote a row's value, so only the error's name is kept.
_SAFE_CLASSES = frozenset({"08", "23", "25", "40", "53", "55", "57"})
# The parts of a PostgreSQL message that quote rows and statements.
_DIAGNOSTIC_LINE = re.compile(
    r"^(?:DETAIL|HINT|CONTEXT|QUERY|LINE \d+):.*(?:\n[ \t]+\S.*)*$", re.MULTILINE
)
_DIAGNOSTIC_START = re.compile(r"\n(?:DETAIL|HINT|CONTEXT|QUERY|LINE \d+):")
# A quoted literal in SQL (client-side binding puts the values into the statement).
_SQL_LITERAL = re.compile(r"[EeBbXxUu]?&?'(?:[^']|'')*'")


class ConnectionSafeExceptionReporterFilter(SafeExceptionReporterFilter):
    """Django's debug page and error reports mask settings and environment variables that
    hold connection URLs (database, broker, cache, DSNs), not only keys and passwords."""

    hidden_settings = re.compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|BROKER|DATABASE|CACHE|DSN",
        flags=re.IGNORECASE,
    )


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _is_database_error(error: BaseException) -> bool:
    return isinstance(error, DjangoDatabaseError | psycopg.Error)


def database_error_summary(error: BaseException) -> str:
    """A database error as it may be logged: its SQLSTATE, the constraint, table and column
    it names, and its primary message only where that cannot quote data."""
    source = error if isinstance(error, psycopg.Error) else error.__cause__
    if not isinstance(source, psycopg.Error):
        # Not the driver's (Django's own): the first line only.
        return str(error).split("\n", 1)[0]
    sqlstate = source.sqlstate or ""
    diag = source.diag
    if sqlstate[:2] in _SAFE_CLASSES and diag.message_primary:
        parts = [diag.message_primary]
    else:
        parts = [type(source).__name__]
    parts.append(f"(SQLSTATE {sqlstate or 'unknown'}")
    for label, name in (
        ("constraint", diag.constraint_name),
        ("table", diag.table_name),
        ("column", diag.column_name),
    ):
        if name:
            parts.append(f"{label} {name}")
    return " ".join(parts[:2]) + "".join(f", {part}" for part in parts[2:]) + ")"


def _without_diagnostics(text: str) -> str:
    return _DIAGNOSTIC_LINE.sub("[database diagnostics redacted]", text)


class DatabaseErrorRedactor(logging.Filter):
    """Drops what database errors quote of rows (PostgreSQL's DETAIL, LINE and CONTEXT,
    values in messages) and the statements and parameters Django logs with DEBUG on.

    Attached to the handlers in LOGGING; it edits the record, so handlers after it see the
    redacted record too."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "django.db.backends":
            self._redact_query(record)
        if isinstance(record.msg, BaseException) and _is_database_error(record.msg):
            record.msg = database_error_summary(record.msg)
        if isinstance(record.args, tuple) and any(
            isinstance(arg, BaseException) and _is_database_error(arg) for arg in record.args
        ):
            record.args = tuple(
                database_error_summary(arg)
                if isinstance(arg, BaseException) and _is_database_error(arg)
                else arg
                for arg in record.args
            )
        if isinstance(record.msg, str) and _DIAGNOSTIC_START.search(record.msg):
            record.msg = _DIAGNOSTIC_START.split(record.msg, 1)[0]
        if record.exc_info and record.exc_info[1] is not None:
            self._redact_traceback(record)
        return True

    @staticmethod
    def _redact_query(record: logging.LogRecord) -> None:
        sql = getattr(record, "sql", None)
        if isinstance(sql, str):
            record.sql = _SQL_LITERAL.sub("'?'", sql)
        if hasattr(record, "params"):
            record.params = "[redacted]"
        if isinstance(record.args, tuple) and len(record.args) == 4:
            duration, statement, _params, alias = record.args
            if isinstance(statement, str):
                statement = _SQL_LITERAL.sub("'?'", statement)
            record.args = (duration, statement, "[redacted]", alias)

    @staticmethod
    def _redact_traceback(record: logging.LogRecord) -> None:
        assert record.exc_info is not None
        error = record.exc_info[1]
        assert error is not None
        replacements = {
            str(link): database_error_summary(link)
            for link in _chain(error)
            if _is_database_error(link) and str(link)
        }
        if not replacements:
            return
        text = record.exc_text or logging.Formatter().formatException(record.exc_info)
        for original, summary in replacements.items():
            text = text.replace(original, summary)
        # Formatters print `exc_text` as it is; without `exc_info` none renders the original.
        record.exc_text = _without_diagnostics(text)
        record.exc_info = None
