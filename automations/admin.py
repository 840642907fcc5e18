"""Staff console for automations: each with its versions, and runs with their step
timeline and waits. All read-only: automations change through the API (validation, locks,
prepared actions), runs through the engine."""

from django.contrib import admin
from django.utils.safestring import SafeString

from automations.models import Automation, AutomationRun, AutomationVersion, RunStep, RunWait
from config.admin import ReadOnlyInline, ReadOnlyModelAdmin, pretty_json


class AutomationVersionInline(ReadOnlyInline):
    model = AutomationVersion
    fk_name = "automation"
    ordering = ["-version_number"]
    readonly_fields = ("version_number", "state", "created_at", "updated_at", "published_at")
    fields = readonly_fields


@admin.register(Automation)
class AutomationAdmin(ReadOnlyModelAdmin):
    list_display = ["name", "status", "trigger_event", "project", "created_at", "deleted_at"]
    list_filter = ["status", ("deleted_at", admin.EmptyFieldListFilter)]
    list_select_related = ["project"]
    search_fields = ["name", "=id", "=trigger_event"]
    search_help_text = "Name, automation id or trigger event (exact)."
    raw_id_fields = ["project", "current_draft_version", "current_published_version"]
    readonly_fields = (
        "id",
        "project",
        "name",
        "description",
        "status",
        "trigger_event",
        "current_draft_version",
        "current_published_version",
        "created_at",
        "updated_at",
        "deleted_at",
    )
    fields = readonly_fields
    inlines = [AutomationVersionInline]


@admin.register(AutomationVersion)
class AutomationVersionAdmin(ReadOnlyModelAdmin):
    list_display = ["automation", "version_number", "state", "created_at", "published_at"]
    list_filter = ["state"]
    list_select_related = ["automation"]
    search_fields = ["=automation__id", "automation__name"]
    raw_id_fields = ["automation", "restored_from_version"]
    readonly_fields = (
        "id",
        "automation",
        "version_number",
        "state",
        "restored_from_version",
        "created_at",
        "updated_at",
        "published_at",
        "definition_display",
        "editor_layout_display",
    )
    fields = readonly_fields

    @admin.display(description="definition")
    def definition_display(self, obj: AutomationVersion) -> SafeString:
        return pretty_json(obj.definition)

    @admin.display(description="editor layout")
    def editor_layout_display(self, obj: AutomationVersion) -> SafeString:
        return pretty_json(obj.editor_layout)


class RunStepInline(ReadOnlyInline):
    model = RunStep
    ordering = ["started_at", "id"]
    show_change_link = False
    rows_select_related = ["email"]
    readonly_fields = (
        "step_key",
        "visit",
        "type",
        "status",
        "outcome",
        "started_at",
        "completed_at",
        "error",
        "email",
        "push_id",
    )
    fields = readonly_fields


class RunWaitInline(ReadOnlyInline):
    model = RunWait
    ordering = ["created_at", "id"]
    show_change_link = False
    readonly_fields = (
        "step_key",
        "visit",
        "event",
        "correlation_key",
        "correlation_value",
        "timeout_at",
        "status",
        "matched_event_id",
        "resolved_at",
    )
    fields = readonly_fields


@admin.register(AutomationRun)
class AutomationRunAdmin(ReadOnlyModelAdmin):
    """Runs grow without bound: the changelist never counts them all (BigTableAdmin)."""

    list_display = [
        "id",
        "automation",
        "status",
        "execution_mode",
        "trigger_event_name",
        "created_at",
        "completed_at",
    ]
    list_filter = ["status", "execution_mode", "terminal_reason"]
    list_select_related = ["automation"]
    search_fields = ["=id", "=automation__id", "=contact__id", "=trigger_event_id"]
    search_help_text = "Run, automation, contact or trigger event id (exact)."
    raw_id_fields = ["project", "automation", "version", "contact"]
    readonly_fields = (
        "id",
        "project",
        "automation",
        "version",
        "contact",
        "trigger_event_id",
        "trigger_event_name",
        "trigger_payload_display",
        "resolved_identity_type",
        "resolved_identity_value",
        "correlation_key",
        "correlation_value",
        "execution_mode",
        "status",
        "current_step_key",
        "last_error",
        "started_at",
        "completed_at",
        "virtual_now",
        "terminal_reason",
        "completed_step_key",
        "cancellation_requested_at",
        "cancellation_reason",
        "canceled_at",
        "created_at",
        "updated_at",
    )
    fields = readonly_fields
    inlines = [RunStepInline, RunWaitInline]

    @admin.display(description="trigger payload")
    def trigger_payload_display(self, obj: AutomationRun) -> SafeString:
        return pretty_json(obj.trigger_payload)
