"""Tool calls: run one, and record it in the audit."""

import logging
import time
from typing import Any

from django.http import HttpRequest

from agent.catalog import Catalog
from agent.dispatch import ToolOutcome, project_uuid, tool_run
from agent.models import ToolCall
from config import clock
from tenancy.access import KeyRecord

logger = logging.getLogger(__name__)

MAX_TOOL_NAME = 100


def tool_call_perform(
    *,
    catalog: Catalog,
    name: str,
    arguments: dict[str, Any] | None,
    key: KeyRecord,
    outer: HttpRequest,
) -> ToolOutcome:
    """Runs a tool call and records it (one insert) whatever its outcome."""
    started_at = clock.now()
    started = time.perf_counter()
    outcome = tool_run(catalog=catalog, name=name, arguments=arguments, key=key, outer=outer)
    duration_ms = (time.perf_counter() - started) * 1000
    raw_project = (arguments or {}).get("project_id")
    try:
        ToolCall.objects.create(
            api_key_id=key.id,
            user_id=key.user_id,
            project_id=project_uuid(raw_project if isinstance(raw_project, str) else None),
            tool=name[:MAX_TOOL_NAME],
            outcome=outcome.code,
            status=outcome.status,
            duration_ms=duration_ms,
            created_at=started_at,
        )
    except Exception:
        # The call is done and its effects stand; a lost audit row must not turn its answer
        # into an error the agent would retry.
        logger.exception("Could not record the %s tool call", name)
    return outcome
