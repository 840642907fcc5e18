"""Reads of automations, their versions and their runs. Soft-deleted automations are
invisible, and so are their versions and runs."""

import datetime as dt
import uuid
from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet, Sum, prefetch_related_objects

from automations.models import (
    Automation,
    AutomationRun,
    AutomationStatus,
    AutomationVersion,
    ExecutionMode,
    RunStatus,
    RunStep,
    RunWait,
    StepEntryCount,
)
from tenancy.models import Project

IN_PROGRESS_STATUSES = (RunStatus.PENDING, RunStatus.RUNNING, RunStatus.WAITING)


def automation_list(*, project: Project) -> QuerySet[Automation]:
    """The project's automations that are not deleted."""
    return Automation.objects.filter(project=project, deleted_at__isnull=True)


def automation_get(*, project: Project, automation_id: uuid.UUID | str) -> Automation | None:
    return automation_list(project=project).filter(id=automation_id).first()


def _run_count(status: str) -> Count:
    return Count(
        "runs",
        filter=Q(runs__status=status, runs__execution_mode=ExecutionMode.LIVE),
    )


def automation_list_triggered_by(*, project: Project, event: str) -> QuerySet[Automation]:
    """The active automations an event of this name starts, with the version they run
    (one probe of the partial trigger index)."""
    return (
        automation_list(project=project)
        .filter(status=AutomationStatus.ACTIVE, trigger_event=event)
        .select_related("current_published_version")
    )


def automation_detail_get(
    *, project: Project, automation_id: uuid.UUID | str, deleted_too: bool = False
) -> Automation | None:
    """The automation as its own answer shows it: current versions, every version, and
    its live runs counted by status (`run_count_<status>`), in two queries. `deleted_too`
    finds a soft-deleted one (for the answer of its deletion)."""
    automations = Automation.objects.filter(project=project)
    if not deleted_too:
        automations = automations.filter(deleted_at__isnull=True)
    return (
        automations.filter(id=automation_id)
        .select_related("current_draft_version", "current_published_version")
        .prefetch_related(
            Prefetch("versions", queryset=AutomationVersion.objects.order_by("version_number"))
        )
        .annotate(**{f"run_count_{status}": _run_count(status) for status in RunStatus.values})
        .first()
    )


def automation_version_list(*, automation: Automation) -> QuerySet[AutomationVersion]:
    return automation.versions.all()


def automation_version_get(
    *, automation: Automation, version_id: uuid.UUID | str
) -> AutomationVersion | None:
    return automation_version_list(automation=automation).filter(id=version_id).first()


def automation_runs_in_progress(*, automation: Automation) -> dict[str, int]:
    """Live runs not yet finished, by status (`pending`, `running`, `waiting`)."""
    counts = dict(
        AutomationRun.objects.filter(
            automation=automation,
            execution_mode=ExecutionMode.LIVE,
            status__in=IN_PROGRESS_STATUSES,
        )
        .values_list("status")
        .annotate(count=Count("id"))
        .values_list("status", "count")
    )
    return {status: counts.get(status, 0) for status in IN_PROGRESS_STATUSES}


def automation_run_list(
    *,
    automation: Automation,
    status: str | None = None,
    execution_mode: str | None = None,
    contact_id: uuid.UUID | None = None,
    created_after: dt.datetime | None = None,
    created_before: dt.datetime | None = None,
) -> QuerySet[AutomationRun]:
    """The automation's runs, each with its step timeline and waits (two more queries per
    page, whatever its size)."""
    runs = AutomationRun.objects.filter(automation=automation).prefetch_related(
        Prefetch("steps", queryset=RunStep.objects.order_by("started_at", "sequence", "id")),
        Prefetch("waits", queryset=RunWait.objects.order_by("created_at", "id")),
    )
    if status is not None:
        runs = runs.filter(status=status)
    if execution_mode is not None:
        runs = runs.filter(execution_mode=execution_mode)
    if contact_id is not None:
        runs = runs.filter(contact_id=contact_id)
    if created_after is not None:
        runs = runs.filter(created_at__gt=created_after)
    if created_before is not None:
        runs = runs.filter(created_at__lt=created_before)
    return runs


def automation_run_get(*, automation: Automation, run_id: uuid.UUID | str) -> AutomationRun | None:
    """One run with its timeline and waits; its steps read by its start too, from their
    one partition (a page of `automation_run_list` probes each partition's index)."""
    run = AutomationRun.objects.filter(automation=automation, id=run_id).first()
    if run is None:
        return None
    steps = RunStep.objects.filter(run_created_at=run.created_at)
    prefetch_related_objects(
        [run],
        Prefetch("steps", queryset=steps.order_by("started_at", "sequence", "id")),
        Prefetch("waits", queryset=RunWait.objects.order_by("created_at", "id")),
    )
    return run


def version_step_entries(*, version: AutomationVersion) -> list[tuple[dict[str, Any], int]]:
    """Each step of the version's definition, in its order, with how many live runs
    entered it: one query summing the version's `StepEntryCount` shards (a range of
    `step_entry_one_per_shard`), never a count of the runs' timelines."""
    entered = dict(
        StepEntryCount.objects.filter(version=version)
        .values("step_key")
        .annotate(total=Sum("entered"))
        .values_list("step_key", "total")
        .order_by()
    )
    return [(step, int(entered.get(step["key"]) or 0)) for step in version.definition["steps"]]
