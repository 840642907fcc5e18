"""Staff console building blocks that know no app: a paginator for big tables, a JSON
pretty-printer and the read-only bases. Every app's admin builds on these."""

import json
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar, cast

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django_celery_beat.admin import PeriodicTaskAdmin
from django_celery_beat.models import PeriodicTask

COUNT_CAP = 10_000

M = TypeVar("M", bound=Model)


class CappedCountPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows, so a page of a huge table never scans all of it."""

    @cached_property
    def count(self) -> int:
        # The console's change lists paginate querysets only; the stub types any sliceable.
        rows = cast("QuerySet[Any]", self.object_list)
        return rows.values("pk")[: COUNT_CAP + 1].count()


def pretty_json(value: Any) -> SafeString:
    """A JSON value as indented, escaped text for a read-only admin field."""
    return format_html(
        '<pre style="margin:0">{}</pre>',
        json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False),
    )


def rows_by_id(queryset: QuerySet[M], term: str, columns: Sequence[str]) -> QuerySet[M]:
    """The rows whose id `columns` (the row's own, foreign keys) hold the UUID `term`,
    matched exactly on each column; none when `term` is not a UUID. For a work-queue
    table's search: Django's `=` search compares a foreign key case-insensitively, which
    cannot use its index."""
    try:
        value = uuid.UUID(term.strip())
    except ValueError:
        return queryset.none()
    found = queryset.none()
    for column in columns:
        found = found | queryset.filter(**{column: value})
    return found


class BigTableAdmin(admin.ModelAdmin):
    """A changelist over a table that grows without bound: no full COUNT(*) per page."""

    paginator = CappedCountPaginator
    show_full_result_count = False

    class Media:
        css = {"all": ["console/console.css"]}


class ReadOnlyModelAdmin(BigTableAdmin):
    """Rows that change only through the API (so events are emitted and rules hold): staff
    may look, and act only through actions that declare their own permission."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    """Related rows shown on a parent's page, fetched with what each row displays."""

    extra = 0
    can_delete = False
    show_change_link = True
    rows_select_related: ClassVar[list[str]] = []

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).select_related(*self.rows_select_related)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# django-celery-beat ships no type information, so its admin class is Any.
class BeatPeriodicTaskAdmin(PeriodicTaskAdmin):  # type: ignore[misc]
    """django-celery-beat's task admin, whose enable, disable, toggle and run actions declare
    no permission (so staff who may only view could switch off the sweepers): each needs
    change permission on periodic tasks here."""

    @admin.action(description="Enable selected tasks", permissions=["change"])
    def enable_tasks(self, request: HttpRequest, queryset: QuerySet[PeriodicTask]) -> None:
        super().enable_tasks(request, queryset)

    @admin.action(description="Disable selected tasks", permissions=["change"])
    def disable_tasks(self, request: HttpRequest, queryset: QuerySet[PeriodicTask]) -> None:
        super().disable_tasks(request, queryset)

    @admin.action(description="Toggle activity of selected tasks", permissions=["change"])
    def toggle_tasks(self, request: HttpRequest, queryset: QuerySet[PeriodicTask]) -> None:
        super().toggle_tasks(request, queryset)

    @admin.action(description="Run selected tasks", permissions=["change"])
    def run_tasks(self, request: HttpRequest, queryset: QuerySet[PeriodicTask]) -> None:
        super().run_tasks(request, queryset)


def beat_admin_secure(site: admin.AdminSite) -> None:
    """Replaces django-celery-beat's task admin on `site` with BeatPeriodicTaskAdmin."""
    if site.is_registered(PeriodicTask):
        site.unregister(PeriodicTask)
    site.register(PeriodicTask, BeatPeriodicTaskAdmin)
