"""Tool calls: run one, and record it in the audit."""

import datetime as dt
import logging
import time
import uuid
from typing import Any

from agent.catalog import Catalog
from agent.dispatch import Outer, ToolOutcome, project_uuid, tool_run
from agent.models import ToolCall
from config.db.bulk import statement_run
from config.db.ids import uuid7
from config.runtime import clock
from tenancy.access import KeyRecord
from tenancy.ratelimit import RateDecision

logger = logging.getLogger(__name__)

MAX_TOOL_NAME = 100

# One statement, one round trip, bound and prepared on the server (the statement of every
# tool call: parsing, planning and the client-side quoting of its nine values cost more
# than the insert). The audit row is committed without waiting for the WAL to reach the
# disk (`synchronous_commit` off for this statement's own transaction): the call's changes
# were committed durably by its endpoint, and only the audit rows of the last fraction of
# a second could be lost if PostgreSQL itself crashed.
_INSERT = f"""
INSERT INTO {ToolCall._meta.db_table}
    (id, api_key_id, user_id, project_id, tool, outcome, status, duration_ms, created_at)
SELECT %b, %b, %b, %b, %b, %b, %b, %b, %b
FROM (SELECT set_config('synchronous_commit', 'off', true)) AS commit_without_flush
"""  # noqa: S608 - the table name is the model's own


def tool_call_record(
    *,
    key: KeyRecord,
    project_id: uuid.UUID | None,
    tool: str,
    outcome: ToolOutcome,
    duration_ms: float,
    created_at: dt.datetime,
) -> None:
    """Records one tool call in the audit (one insert)."""
    # In the statement's column order. The id is time-ordered, of the call's own
    # millisecond, so each row goes to the right edge of its partition's primary key
    # index, where a random one dirtied a page anywhere in it.
    values = (
        uuid7(at=created_at),
        uuid.UUID(key.id),
        key.user_id,
        project_id,
        tool[:MAX_TOOL_NAME],
        outcome.code,
        outcome.status,
        duration_ms,
        created_at,
    )
    statement_run(_INSERT, values, prepare=True)


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
            project_id=project_uuid(raw_project if isinstance(raw_project, str) else None),
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
