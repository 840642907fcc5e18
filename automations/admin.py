"""Staff console for automations: each with its versions, and runs with their step
timeline and waits. Read-only: automations change through the API (validation, locks,
prepared actions), runs through the engine. Two actions, each declaring `change`: cancel
runs (as the API's cancel does) and requeue the dead-lettered jobs of runs."""

import uuid
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString

from automations.models import (
    Automation,
    AutomationRun,
    AutomationVersion,
    RunJob,
    RunStep,
    RunWait,
)
from automations.queue import RUN_QUEUE
from automations.selectors import version_step_entries
from automations.services.report import ReportDays, automation_report_get
from automations.services.runs import runs_cancel_by_staff
from config.console.admin import ReadOnlyInline, ReadOnlyModelAdmin, pretty_json
from config.console.charts import bar_chart, funnel_chart
from config.workqueue.admin import WorkQueueAdmin

CANCEL_REASON = "Canceled from the staff console."


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
        "step_funnel",
        "conversion",
        "created_at",
        "updated_at",
        "deleted_at",
    )
    fields = readonly_fields
    inlines = [AutomationVersionInline]

    @admin.display(description="conversion")
    def conversion(self, obj: Automation) -> SafeString | str:
        """Its goal's conversion against the holdout, from the report's summary table."""
        if not (
            obj.current_published_version and obj.current_published_version.definition.get("goal")
        ):
            return "No goal: the published version names none."
        report = automation_report_get(automation=obj, days=ReportDays())
        held = report["holdout"]
        rates = [report["conversion_rate"], held["conversion_rate"]]
        chart = bar_chart(
            title="Conversion rate, %, against the holdout",
            labels=["treated", "holdout"],
            values=[round(100 * (rate or 0), 1) for rate in rates],
            unit="%",
        )
        lift, interval = report["lift"], report["lift_ci95"]
        if lift is not None and interval is not None:
            low, high = (100 * bound for bound in interval)
            lift_text = f"{100 * lift:+.1f} % (95 % interval {low:+.1f} to {high:+.1f} %)"
        else:
            lift_text = "none yet: it needs conversions in the holdout to compare with"
        return format_html(
            '<div class="conversion-chart">{}</div><table class="conversion-figures">'
            "<tr><th></th><th>entered</th><th>converted</th></tr>"
            "<tr><th>treated</th><td>{}</td><td>{}</td></tr>"
            "<tr><th>holdout</th><td>{}</td><td>{}</td></tr></table><p>Lift: {}</p>",
            chart,
            report["entered"],
            report["converted"],
            held["entered"],
            held["converted"],
            lift_text,
        )

    @admin.display(description="runs by step")
    def step_funnel(self, obj: Automation) -> SafeString | str:
        """How many live runs of the published version entered each of its steps."""
        version = obj.current_published_version
        if version is None:
            return "No published version."
        steps = version_step_entries(version=version)
        stages = [(f"{step['key']} ({step['type']})", entered) for step, entered in steps]
        chart = funnel_chart(
            title=f"Runs entering each step of version {version.version_number}", stages=stages
        )
        figures = format_html_join(
            "",
            '<tr class="step" data-step="{}"><th>{}</th><td>{}</td><td>{}</td></tr>',
            ((step["key"], step["key"], step["type"], entered) for step, entered in steps),
        )
        return format_html(
            "<p>Version {}: live runs that entered each step (a loop back counts once).</p>"
            '<div class="step-funnel">{}</div><table class="step-figures">{}</table>',
            version.version_number,
            chart,
            figures,
        )


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
    # The run's own order: steps taken in one advance share a start time.
    ordering = ["sequence", "started_at", "id"]
    show_change_link = False
    rows_select_related = ["email"]
    readonly_fields = (
        "sequence",
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
        "rendered",
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
        "contact",
        "status",
        "execution_mode",
        "trigger_event_name",
        "created_at",
        "completed_at",
    ]
    list_filter = ["status", "execution_mode", "terminal_reason"]
    list_select_related = ["automation", "contact"]
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
    actions = ["cancel_runs"]

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        # Fields stay read-only; canceling a run changes it.
        return bool(request.user.has_perm("automations.change_automationrun"))

    @admin.action(description="Cancel the selected runs", permissions=["cancel"])
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[AutomationRun]) -> None:
        count = runs_cancel_by_staff(runs=queryset, reason=CANCEL_REASON)
        self.message_user(request, f"Canceled or asked to stop {count} runs.", messages.SUCCESS)

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<uuid:object_id>/cancel/",
                self.admin_site.admin_view(self.cancel_view),
                name="automations_automationrun_cancel_one",
            ),
            *super().get_urls(),
        ]

    def cancel_view(self, request: HttpRequest, object_id: uuid.UUID) -> HttpResponse:
        """One run canceled, from the button on a contact's timeline; back to `next`."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_cancel_permission(request):
            raise PermissionDenied
        count = runs_cancel_by_staff(
            runs=AutomationRun.objects.filter(pk=object_id), reason=CANCEL_REASON
        )
        if count:
            self.message_user(request, "The run is canceled.", messages.SUCCESS)
        else:
            self.message_user(request, "The run had already finished.", messages.WARNING)
        back = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            back = reverse("admin:automations_automationrun_change", args=[object_id])
        return HttpResponseRedirect(back)

    @admin.display(description="trigger payload")
    def trigger_payload_display(self, obj: AutomationRun) -> SafeString:
        return pretty_json(obj.trigger_payload)


@admin.register(RunJob)
class RunJobAdmin(WorkQueueAdmin):
    """The runs' work queue: a job per run, due when the engine has something to do for the
    run (`next_attempt_at` is the wait's deadline while the run waits). Jobs whose retries
    ran out (the database kept failing them) can be requeued."""

    list_display = ["run", "status", "attempts", "error_code", "next_attempt_at", "created_at"]
    list_filter = ["status", "error_code"]
    list_select_related = ["run"]
    search_fields = ["=run__id"]
    search_help_text = "Run id (exact)."
    raw_id_fields = ["run"]
    readonly_fields = (
        "run",
        "status",
        "attempts",
        "next_attempt_at",
        "lease_expires_at",
        "error_code",
        "last_error",
        "created_at",
    )
    fields = readonly_fields
    item, items = "job", "jobs"

    def requeue_rows(self, request: HttpRequest, ids: list[Any]) -> int:
        return RUN_QUEUE.requeue(ids=ids)
