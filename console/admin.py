"""Runs in the console can be cancelled: the automations' run admin with a cancel action
and a per-run cancel page (the button on a contact's timeline posts there). Replaces the
registered admin the way config.admin.beat_admin_secure replaces celery-beat's."""

import uuid

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.http import url_has_allowed_host_and_scheme

from automations.admin import AutomationRunAdmin
from automations.errors import RunFinished
from automations.models import AutomationRun
from automations.services.runs import automation_run_cancel
from console.automations import may_cancel_runs

CANCEL_REASON = "Canceled from the staff console."


class CancelableRunAdmin(AutomationRunAdmin):
    actions = ["cancel_runs"]

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return may_cancel_runs(request.user)

    def _cancel(self, run: AutomationRun) -> bool:
        try:
            automation_run_cancel(
                project=run.project,
                automation_id=run.automation_id,
                run_id=run.pk,
                reason=CANCEL_REASON,
            )
        except RunFinished:
            return False
        return True

    @admin.action(description="Cancel the selected runs", permissions=["cancel"])
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[AutomationRun]) -> None:
        canceled = sum(self._cancel(run) for run in queryset.select_related("project"))
        self.message_user(request, f"Canceled {canceled} runs.", messages.SUCCESS)

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<uuid:object_id>/cancel/",
                self.admin_site.admin_view(self.cancel_view),
                name="automations_automationrun_cancel",
            ),
            *super().get_urls(),
        ]

    def cancel_view(self, request: HttpRequest, object_id: uuid.UUID) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_cancel_permission(request):
            raise PermissionDenied
        run = AutomationRun.objects.select_related("project").filter(pk=object_id).first()
        if run is None:
            self.message_user(request, "No such run.", messages.WARNING)
        elif self._cancel(run):
            self.message_user(request, "The run is canceled.", messages.SUCCESS)
        else:
            self.message_user(request, "The run had already finished.", messages.WARNING)
        back = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            back = reverse("admin:automations_automationrun_change", args=[object_id])
        return HttpResponseRedirect(back)


if admin.site.is_registered(AutomationRun):
    admin.site.unregister(AutomationRun)
admin.site.register(AutomationRun, CancelableRunAdmin)
