"""The staff console's site: the Django admin titled as the product, a dashboard on its
index, and a project filter on every list whose rows belong to a project. Families add
dashboard sections (campaigns awaiting review) through a registry; config knows none."""

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.db.models import Count, Min, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse

from config.console.charts import Series, bar_chart, line_chart
from config.console.samples import bucket_labels, queue_histories
from config.registries.console import dashboard_sources
from config.runtime import clock
from config.workqueue.models import DUE_STATUSES, WorkStatus
from config.workqueue.registry import work_queue_models

PRODUCT = "Sendrealm"
RECENT_FAILURES = 10


# --- the project filter -------------------------------------------------------------------


def project_path(model: type[models.Model]) -> str | None:
    """How a model's rows reach their project: `project`, or one foreign key away
    (`email__project`, `message__project`); None when they do not belong to one."""
    try:
        model._meta.get_field("project")
        return "project"
    except FieldDoesNotExist:
        pass
    for candidate in model._meta.get_fields():
        if not candidate.many_to_one and not candidate.one_to_one:
            continue
        if not getattr(candidate, "concrete", False):
            continue
        target = candidate.related_model
        if target is None or isinstance(target, str):
            continue
        try:
            target._meta.get_field("project")
        except FieldDoesNotExist:
            continue
        return f"{candidate.name}__project"
    return None


class ProjectFilter(admin.SimpleListFilter):
    """Rows of one project, named by its id or its exact name (a text box: a team with
    thousands of projects would not fit in a list of links)."""

    title = "project"
    parameter_name = "project"
    template = "admin/console/input_filter.html"
    path = "project"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # One placeholder choice so that Django shows the filter at all.
        return [("", "")]

    def choices(self, changelist: Any) -> Any:
        # The text box keeps the list's other parameters (search, other filters).
        yield {
            "selected": bool(self.value()),
            "value": self.value() or "",
            "kept": [
                (name, value)
                for name, value in changelist.params.items()
                if name != self.parameter_name
            ],
        }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = (self.value() or "").strip()
        if not value:
            return queryset
        try:
            return queryset.filter(**{f"{self.path}_id": uuid.UUID(value)})
        except ValueError:
            return queryset.filter(**{f"{self.path}__name": value})


def project_filter_for(path: str) -> type[ProjectFilter]:
    return type(f"ProjectFilter_{path}", (ProjectFilter,), {"path": path})


# --- the site -----------------------------------------------------------------------------


class ConsoleSite(admin.AdminSite):
    """The staff console: Django's admin, titled as the product, with the dashboard."""

    site_header = f"{PRODUCT} staff console"
    site_title = f"{PRODUCT} console"
    index_title = "Operations"
    index_template = "admin/console/index.html"

    def register(self, model_or_iterable: Any, admin_class: Any = None, **options: Any) -> None:
        super().register(model_or_iterable, admin_class, **options)
        models_ = (
            model_or_iterable
            if isinstance(model_or_iterable, list | tuple)
            else [model_or_iterable]
        )
        for model in models_:
            self._filter_by_project(self._registry[model])

    @staticmethod
    def _filter_by_project(model_admin: "admin.ModelAdmin[Any]") -> None:
        """Every list of rows that belong to a project can be narrowed to one."""
        path = project_path(model_admin.model)
        if path is None:
            return
        filters = list(model_admin.list_filter or [])
        if any(isinstance(f, type) and issubclass(f, ProjectFilter) for f in filters):
            return
        # Per instance: the class may be shared (subclassed) by other admins.
        # The stubs declare `list_filter` a ClassVar; setting it on the instance is the point.
        model_admin.list_filter = [project_filter_for(path), *filters]  # type: ignore[misc]

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        context = {**(extra_context or {}), "dashboard": dashboard(request)}
        return super().index(request, extra_context=context)


# --- the dashboard ------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueFigures:
    label: str
    name: str
    depth: int
    processing: int
    oldest_seconds: float
    dead_letters: int
    dead_letters_url: str | None


def _admin_url(name: str, *args: Any, query: str = "") -> str | None:
    try:
        return reverse(name, args=args) + query
    except NoReverseMatch:
        return None


def _dead_letters_url(model: type[models.Model]) -> str | None:
    """The console's dead-letter list of a queue: a registered proxy named for it, else
    the model's list filtered by status."""
    site = admin.site
    for registered in site._registry:
        meta = registered._meta
        if meta.proxy and meta.concrete_model is model and "deadletter" in (meta.model_name or ""):
            return _admin_url(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    meta = model._meta
    return _admin_url(
        f"admin:{meta.app_label}_{meta.model_name}_changelist",
        query=f"?status__exact={WorkStatus.DEAD_LETTERED.value}",
    )


def queue_figures() -> list[QueueFigures]:
    """Depth, claimed items, oldest due wait and dead letters of every queue (indexed
    counts: four queries per queue, whatever the sizes)."""
    now = clock.now()
    figures = []
    for label, model in work_queue_models().items():
        rows = model._default_manager
        due = rows.filter(status__in=DUE_STATUSES, next_attempt_at__lte=now).aggregate(
            count=Count("pk"), first=Min("next_attempt_at")
        )
        first = due["first"]
        figures.append(
            QueueFigures(
                label=label,
                name=str(model._meta.verbose_name_plural),
                depth=due["count"],
                processing=rows.filter(status=WorkStatus.PROCESSING).count(),
                oldest_seconds=(now - first).total_seconds() if first else 0.0,
                dead_letters=rows.filter(status=WorkStatus.DEAD_LETTERED).count(),
                dead_letters_url=_dead_letters_url(model),
            )
        )
    return figures


@dataclass(frozen=True)
class Failure:
    queue: str
    item: str
    status: str
    error: str
    at: dt.datetime | None
    url: str | None


def recent_failures(limit: int = RECENT_FAILURES) -> list[Failure]:
    """The latest failed or dead-lettered items of every queue, newest first (one query
    per queue)."""
    found: list[Failure] = []
    for model in work_queue_models().values():
        order = "-created_at" if _has_field(model, "created_at") else "-pk"
        meta = model._meta
        rows = model._default_manager.filter(
            status__in=[WorkStatus.FAILED, WorkStatus.DEAD_LETTERED]
        ).order_by(order)[:limit]
        for row in rows:
            found.append(
                Failure(
                    queue=str(meta.verbose_name_plural),
                    item=str(row.pk),
                    status=str(row.status),
                    error=(row.error_code or row.last_error or "")[:160],
                    at=getattr(row, "created_at", None),
                    url=_admin_url(f"admin:{meta.app_label}_{meta.model_name}_change", row.pk),
                )
            )
    found.sort(key=lambda f: f.at or dt.datetime.min.replace(tzinfo=dt.UTC), reverse=True)
    return found[:limit]


def _has_field(model: type[models.Model], name: str) -> bool:
    try:
        model._meta.get_field(name)
    except FieldDoesNotExist:
        return False
    return True


def queue_charts(queues: list[QueueFigures]) -> dict[str, Any]:
    """The queues now (waiting and dead letters per queue, from the figures above) and over
    the last 24 hours (from the minute samples: no count of the tables)."""
    names = [queue.name.capitalize() for queue in queues]
    charts: dict[str, Any] = {
        "waiting_now": bar_chart(
            title="Waiting now, by queue",
            labels=names,
            values=[queue.depth for queue in queues],
            unit="items",
        ),
        "dead_letters_now": bar_chart(
            title="Dead letters now, by queue",
            labels=names,
            values=[queue.dead_letters for queue in queues],
            unit="items",
        ),
    }
    histories = queue_histories()
    if histories is None:
        return {**charts, "history_missing": True}
    labels = bucket_labels(clock.now())
    for key, title, values in (
        ("waiting_history", "Waiting, last 24 hours (UTC, most per 30 minutes)", "waiting"),
        ("dead_letters_history", "Dead letters, last 24 hours (UTC)", "dead_letters"),
    ):
        charts[key] = line_chart(
            title=title,
            labels=labels,
            series=[
                Series(history.name.capitalize(), getattr(history, values)) for history in histories
            ],
            unit="items",
        )
    return charts


def dashboard(request: HttpRequest) -> dict[str, Any]:
    sections = [section for source in dashboard_sources() if (section := source(request))]
    queues = queue_figures()
    return {
        "queues": queues,
        "charts": queue_charts(queues),
        "failures": recent_failures(),
        "sections": sections,
    }


def console_page(request: HttpRequest, template: str, context: dict[str, Any]) -> TemplateResponse:
    """A console page in the site's frame (header, breadcrumbs, permissions)."""
    return TemplateResponse(request, template, {**admin.site.each_context(request), **context})
