"""Staff console: the audit of agent tool calls, read-only."""

import logging
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from agent.models import ToolCall
from agent.services import tool_calls_flush
from config.console.admin import ReadOnlyModelAdmin

logger = logging.getLogger(__name__)


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyModelAdmin):
    """Every MCP tool call: key, user, project, tool, outcome, duration and time."""

    list_display = [
        "created_at",
        "tool",
        "outcome",
        "status",
        "duration",
        "project_id",
        "user_id",
        "api_key_id",
    ]
    list_filter = ["outcome", "tool"]
    search_fields = ["=project_id", "=api_key_id", "tool"]
    date_hierarchy = "created_at"
    ordering = ["-created_at"]
    readonly_fields = (
        "id",
        "created_at",
        "tool",
        "outcome",
        "status",
        "duration",
        "project_id",
        "user_id",
        "api_key_id",
    )
    fields = readonly_fields

    @admin.display(description="duration", ordering="duration_ms")
    def duration(self, obj: ToolCall) -> str:
        return f"{obj.duration_ms:,.1f} ms"

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # The rows this process holds are written first: a call made through this process
        # shows at once, another process's within its interval (AGENT_AUDIT_FLUSH_SECONDS).
        try:
            tool_calls_flush()
        except Exception:
            logger.warning("Could not write this process's tool-call audit rows", exc_info=True)
        return super().changelist_view(request, extra_context)
