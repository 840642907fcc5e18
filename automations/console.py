"""Automation runs in the staff console and the metrics: a contact's runs with their steps
on its timeline (contacts.hooks), with a cancel button, and runs by status for
Prometheus (config.registries.metrics)."""

import datetime as dt
from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Prefetch
from django.urls import reverse
from prometheus_client.core import GaugeMetricFamily, Metric

from automations.models import (
    FINISHED_RUN_STATUSES,
    AutomationRun,
    ExecutionMode,
    RunStatus,
    RunStep,
)
from contacts.models import Contact
from contacts.timeline import TimelineAction, TimelineEntry, admin_change_url

CANCEL_PERMISSION = "automations.change_automationrun"


def may_cancel_runs(user: Any) -> bool:
    return bool(getattr(user, "has_perm", None)) and user.has_perm(CANCEL_PERMISSION)


def run_timeline(
    *, contact: Contact, before: dt.datetime | None, limit: int, user: Any
) -> list[TimelineEntry]:
    """The contact's runs, newest first, each with its steps in the order the run took
    them (two queries). A test run is labelled as one: it sent nothing, and its steps'
    times are its virtual clock's."""
    steps = RunStep.objects.order_by("sequence", "started_at", "id")
    runs = (
        AutomationRun.objects.filter(contact=contact)
        .select_related("automation")
        .prefetch_related(Prefetch("steps", queryset=steps))
    )
    if before is not None:
        runs = runs.filter(created_at__lte=before)
    cancel = may_cancel_runs(user)
    entries = []
    for run in runs.order_by("-created_at", "-id")[:limit]:
        test = run.execution_mode == ExecutionMode.TEST
        detail = f"trigger {run.trigger_event_name}"
        if test:
            detail = f"test run, nothing sent; step times on its virtual clock · {detail}"
        if run.terminal_reason:
            detail += f" · {run.terminal_reason}"
        if run.last_error:
            detail += f" · {run.last_error[:120]}"
        actions: tuple[TimelineAction, ...] = ()
        if cancel and run.status not in FINISHED_RUN_STATUSES:
            url = reverse("admin:automations_automationrun_cancel_one", args=[run.pk])
            actions = (TimelineAction(label="Cancel run", url=url),)
        entries.append(
            TimelineEntry(
                at=run.created_at,
                kind="run",
                key=str(run.pk),
                title=f"{run.automation.name} (test run)" if test else run.automation.name,
                status=run.status,
                detail=detail,
                url=admin_change_url(run),
                children=tuple(
                    TimelineEntry(
                        at=step.started_at,
                        kind="step",
                        key=str(step.pk),
                        title=f"{step.step_key} ({step.type})",
                        status=step.status,
                        detail=step.error or step.outcome or "",
                    )
                    for step in run.steps.all()
                ),
                actions=actions,
            )
        )
    return entries


def runs_by_status() -> Iterable[Metric]:
    """Automation runs by status (one grouped count)."""
    gauge = GaugeMetricFamily(
        "sendrealm_automation_runs", "Automation runs by status.", labels=["status"]
    )
    counts = dict(
        AutomationRun.objects.order_by()
        .values_list("status")
        .annotate(count=Count("pk"))
        .values_list("status", "count")
    )
    for status in RunStatus.values:
        gauge.add_metric([status], counts.get(status, 0))
    yield gauge
