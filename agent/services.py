"""Tool calls: run one, and record it in the audit."""

import datetime as dt
import logging
import time
from typing import Any

from django.db import DataError, connection, transaction

from agent import conf
from agent.catalog import Catalog
from agent.dispatch import Outer, ToolOutcome, project_id_text, tool_run
from agent.models import ToolCall
from config.db.bulk import statement_run
from config.db.ids import uuid7
from config.runtime import clock
from config.runtime.buffered import BufferedWriter
from tenancy.access import KeyRecord
from tenancy.ratelimit import RateDecision

logger = logging.getLogger(__name__)

MAX_TOOL_NAME = 100

# The columns of an audit row, in the order `_rows_insert` binds them: the row's id, then
# the row as `tool_call_record` leaves it.
_COLUMNS = (
    "id",
    "api_key_id",
    "user_id",
    "project_id",
    "tool",
    "outcome",
    "status",
    "duration_ms",
    "created_at",
)
_TYPES = ("uuid", "uuid", "integer", "uuid", "text", "text", "smallint", "float8", "timestamptz")
# The rows a process gathered, in one statement whatever their number: each column as one
# array bound on the server, read back with `unnest`. They are committed without waiting
# for the WAL to reach the disk (`synchronous_commit` off for this statement's own
# transaction): the calls' changes were committed durably by their endpoints.
_INSERT = f"""
INSERT INTO {ToolCall._meta.db_table} ({", ".join(_COLUMNS)})
SELECT v.* FROM unnest({", ".join(f"%b::{kind}[]" for kind in _TYPES)}) AS v
CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS commit_without_flush
"""  # noqa: S608 - the table name is the model's own
# Past this many rows held (the database away for long), the oldest are dropped.
MAX_HELD_ROWS = 100_000
# Rows that wake the buffer's thread before its interval ends.
FLUSH_BATCH = 2_000

# A call's row as the request leaves it: the key and project ids as their text (the
# statement reads them as UUIDs), the row's own id made when it is written.
AuditRow = tuple[str, int | None, str | None, str, str, int, float, dt.datetime]


def _rows_insert(rows: list[AuditRow]) -> None:
    # Each id is time-ordered, of its call's own millisecond, so each row goes to the right
    # edge of its partition's primary key index, where a random one dirtied a page
    # anywhere in it.
    ids = [uuid7(at=row[-1]) for row in rows]
    columns = [ids, *(list(column) for column in zip(*rows, strict=True))]
    statement_run(_INSERT, columns, prepare=True)


def _rows_tried(rows: list[AuditRow]) -> None:
    """`_rows_insert`, leaving a transaction it runs in usable if it fails (a reader
    flushing inside one)."""
    if connection.in_atomic_block:
        with transaction.atomic():
            _rows_insert(rows)
    else:
        _rows_insert(rows)


def _rows_write(rows: list[AuditRow]) -> None:
    """Writes the rows in one statement; if the database refuses a row's values, the
    others one by one, so that one row it cannot take does not hold back the rest."""
    try:
        _rows_tried(rows)
    except DataError:
        for row in rows:
            try:
                _rows_tried([row])
            except DataError:
                logger.exception("Dropped a tool-call audit row the database refused: %r", row)
    except Exception:
        # On the buffer's own thread no request's end closes a broken connection: the
        # next write opens a new one. The buffer keeps the rows for it.
        if not connection.in_atomic_block:
            connection.close()
        raise


def _newest_kept(rows: list[AuditRow]) -> list[AuditRow]:
    if len(rows) <= MAX_HELD_ROWS:
        return rows
    logger.error(
        "Dropped %d tool-call audit rows the database did not take", len(rows) - MAX_HELD_ROWS
    )
    return rows[-MAX_HELD_ROWS:]


_buffer: BufferedWriter[AuditRow] = BufferedWriter(
    name="tool-call-audit",
    write=_rows_write,
    interval=conf.audit_flush_seconds,
    batch=FLUSH_BATCH,
    compact=_newest_kept,
)


def tool_call_record(
    *,
    key: KeyRecord,
    project_id: str | None,
    tool: str,
    outcome: ToolOutcome,
    duration_ms: float,
    created_at: dt.datetime,
) -> None:
    """Records one tool call in the audit: kept by the process and written with the others
    of its interval (`AGENT_AUDIT_FLUSH_SECONDS`), or at once when that is 0. `project_id`
    is a well-formed project id (`project_id_text`) or None."""
    row: AuditRow = (
        key.id,
        key.user_id,
        project_id,
        tool[:MAX_TOOL_NAME],
        outcome.code,
        outcome.status,
        duration_ms,
        created_at,
    )
    if conf.audit_flush_seconds() > 0:
        _buffer.add(row)
    else:
        _rows_insert([row])


def tool_calls_flush() -> None:
    """Writes the audit rows this process holds now (a reader in the process sees them)."""
    _buffer.flush()


def tool_calls_retention_days() -> int | None:
    """How long the tool-call audit is kept: no policy yet (None), so the partition kit
    keeps every partition of it."""
    return None


def tool_call_perform(
    *,
    catalog: Catalog,
    name: str,
    arguments: dict[str, Any] | None,
    key: KeyRecord,
    rate_limit: RateDecision | None,
    outer: Outer,
) -> ToolOutcome:
    """Runs a tool call and records it in the audit, whatever its outcome."""
    started_at = clock.now()
    started = time.perf_counter()
    outcome = tool_run(
        catalog=catalog,
        name=name,
        arguments=arguments,
        key=key,
        rate_limit=rate_limit,
        outer=outer,
    )
    duration_ms = (time.perf_counter() - started) * 1000
    raw_project = (arguments or {}).get("project_id")
    try:
        tool_call_record(
            key=key,
            project_id=project_id_text(raw_project),
            tool=name,
            outcome=outcome,
            duration_ms=duration_ms,
            created_at=started_at,
        )
    except Exception:
        # The call is done and its effects stand; a lost audit row must not turn its answer
        # into an error the agent would retry.
        logger.exception("Could not record the %s tool call", name)
    return outcome
