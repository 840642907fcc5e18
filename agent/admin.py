"""Staff console: the audit of agent tool calls, read-only."""

from django.contrib import admin

from agent.models import ToolCall
from config.console.admin import ReadOnlyModelAdmin


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
