"""The staff console's pages of a work-queue table: read-only rows and requeue, one at a time
or many, for the rows whose retries ran out; every family's work-queue admin builds on these."""

from typing import Any, ClassVar

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse

from config.console.admin import BigTableAdmin


class WorkQueueAdmin(BigTableAdmin):
    """A work-queue table (config/workqueue): read-only rows, and requeue for those whose
    retries ran out, many at a time (the `requeue` action) or one at a time (a button on
    the row's page posting to `<id>/requeue/`). Both need the `change` permission: staff
    who may only look must not send or apply anything again.

    A subclass names `item` (`"event"`), `items` (`"events"`) and `requeue_rows`, the
    family's service that requeues the dead-lettered rows among `ids` and answers how
    many it took (rows no longer dead-lettered are left alone)."""

    actions = ["requeue"]
    change_form_template = "admin/work_queue/change_form.html"
    item: ClassVar[str] = "row"
    items: ClassVar[str] = "rows"
    # Why a selected row was not requeued, for the message after the action.
    left_alone: ClassVar[str] = "no longer dead-lettered"

    def requeue_rows(self, request: HttpRequest, ids: list[Any]) -> int:
        raise NotImplementedError

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        """Every field is read-only; state changes go through requeue only."""

    @admin.display(description="last error")
    def short_error(self, obj: Any) -> str:
        return str(obj.last_error)[:120]

    @admin.action(permissions=["change"])
    def requeue(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        selected = list(queryset.values_list("pk", flat=True))
        count = self.requeue_rows(request, selected)
        left = len(selected) - count
        note = f" ({left} left alone: {self.left_alone})" if left else ""
        level = messages.SUCCESS if count or not left else messages.WARNING
        self.message_user(request, f"Requeued {count} {self._noun(count)}.{note}", level)

    def get_action(self, action: Any) -> Any:
        found = super().get_action(action)
        if found is not None and found[1] == "requeue":
            func, name, _ = found
            return func, name, f"Requeue the selected dead-lettered {self.items}"
        return found

    def _noun(self, count: int) -> str:
        return self.item if count == 1 else self.items

    def _changelist_name(self) -> str:
        meta = self.model._meta
        return f"{meta.app_label}_{meta.model_name}"

    def get_urls(self) -> list[URLPattern]:
        return [
            # Any key, as the admin's own `<path:object_id>/change/`: work-queue rows have
            # UUID keys (events, deliveries) or integer ones (import chunks, fan-out
            # batches); the view reads it as the model's key.
            path(
                "<path:object_id>/requeue/",
                self.admin_site.admin_view(self.requeue_view),
                name=f"{self._changelist_name()}_requeue",
            ),
            *super().get_urls(),
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = {
            **(extra_context or {}),
            "requeue_url_name": f"admin:{self._changelist_name()}_requeue",
            "requeue_label": f"Requeue this {self.item}",
            # Nothing on the page can be edited: requeue is its one control.
            "show_save": False,
            "show_save_and_continue": False,
            "show_save_and_add_another": False,
        }
        return super().change_view(request, object_id, form_url, context)

    def requeue_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        # Like the action: staff who may only view the queue must not change it.
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_change_permission(request):
            raise PermissionDenied
        try:
            key = self.model._meta.pk.to_python(object_id)
        except ValidationError:
            # As the admin's own pages answer an object that does not exist.
            self.message_user(
                request, f"The {self.item} with key “{object_id}” does not exist.", messages.WARNING
            )
            return HttpResponseRedirect(reverse("admin:index"))
        if self.requeue_rows(request, [key]):
            self.message_user(request, f"Requeued the {self.item}.", messages.SUCCESS)
        else:
            self.message_user(
                request, f"The {self.item} was left alone: {self.left_alone}.", messages.WARNING
            )
        return HttpResponseRedirect(reverse(f"admin:{self._changelist_name()}_changelist"))


class DeadLetterAdmin(WorkQueueAdmin):
    """The dead-letter queue of a work-queue table: only the rows whose retries ran out."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).filter(status="dead_lettered")


class ErrorCodeFilter(admin.SimpleListFilter):
    """A dead-letter list's filter by error code: the codes its model's dead-lettered rows
    carry (`(none)` for rows without one)."""

    title = "error"
    parameter_name = "error"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        codes = (
            model_admin.model._default_manager.filter(status="dead_lettered")
            .order_by("error_code")
            .values_list("error_code", flat=True)
            .distinct()
        )
        return [(code, code or "(none)") for code in codes]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(error_code=value)
