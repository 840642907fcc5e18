"""Retention: finished runs older than the project's `run_retention_days` are deleted with
their timeline, waits and job; resolved waits older than `wait_retention_days` are deleted
on their own (a long run keeps only its recent ones). A run in progress and an open wait
are never touched. Bounded batches, like events retention.

The steps' table is partitioned by the run's start (config/db/partitions.py): a partition
is dropped whole once no project may keep a run started in its period
(`runs_longest_retention_days`) and no run of its period is still kept, unfinished or
finished too recently (`run_steps_partition_may_drop`: a run may wait for months). The
runs of a dropped partition are all expired by their own project's policy: the purge
here deletes them at its next pass, their timeline already gone. Until then each
project's own policy is applied here, row by row (a run with its steps)."""

import datetime as dt
from typing import Any

from django.db.models import Model, Q, QuerySet

from automations.models import (
    FINISHED_RUN_STATUSES,
    AutomationRun,
    ExecutionMode,
    RunWait,
    WaitStatus,
)
from config.runtime import clock
from tenancy.selectors import project_retention_list, project_retention_longest

PURGE_BATCH = 2000
PURGE_MAX_ROWS_PER_RUN = 50_000


def _purge(queryset_ids: QuerySet[Any, Any], model: type[Model], *, limit: int) -> int:
    ids = list(queryset_ids[:limit])
    if not ids:
        return 0
    _, per_model = model._default_manager.filter(id__in=ids).delete()
    return int(per_model.get(model._meta.label, 0))


def runs_purge_expired(
    *, batch_size: int = PURGE_BATCH, max_rows: int = PURGE_MAX_ROWS_PER_RUN
) -> int:
    """Deletes expired finished runs and resolved waits, at most `max_rows` of each per
    call (the next call goes on); how many rows were deleted."""
    now = clock.now()
    runs = waits = 0
    policies = project_retention_list(fields=["run_retention_days", "wait_retention_days"])
    for project_id, run_days, wait_days in policies:
        run_cutoff = now - dt.timedelta(days=run_days)
        # Live runs by when they ended; test runs (whose times are virtual) by when made.
        for finished in (
            AutomationRun.objects.filter(
                project_id=project_id,
                execution_mode=ExecutionMode.LIVE,
                completed_at__lt=run_cutoff,
                status__in=FINISHED_RUN_STATUSES,
            ).order_by("completed_at"),
            AutomationRun.objects.filter(
                project_id=project_id,
                execution_mode=ExecutionMode.TEST,
                created_at__lt=run_cutoff,
                status__in=FINISHED_RUN_STATUSES,
            ).order_by("created_at"),
        ):
            while runs < max_rows:
                deleted = _purge(
                    finished.values_list("id", flat=True),
                    AutomationRun,
                    limit=min(batch_size, max_rows - runs),
                )
                runs += deleted
                if not deleted:
                    break
        wait_cutoff = now - dt.timedelta(days=wait_days)
        resolved = (
            RunWait.objects.filter(project_id=project_id, resolved_at__lt=wait_cutoff)
            .exclude(status=WaitStatus.WAITING)
            .order_by("resolved_at")
        )
        while waits < max_rows:
            deleted = _purge(
                resolved.values_list("id", flat=True),
                RunWait,
                limit=min(batch_size, max_rows - waits),
            )
            waits += deleted
            if not deleted:
                break
        if runs >= max_rows and waits >= max_rows:
            break
    return runs + waits


def runs_longest_retention_days() -> int | None:
    """The longest any project keeps its finished runs: a steps partition whose period
    ended before that is a candidate for the drop (None, no project: every one stays)."""
    return project_retention_longest(field="run_retention_days")


def run_steps_partition_may_drop(
    *, lower: dt.datetime, upper: dt.datetime, before: dt.datetime
) -> bool:
    """Whether the steps of the runs started in [lower, upper) may go: no run of that
    period is unfinished (it may still wait, read and write its timeline) or finished at
    or after `before` (now less the longest retention: a project may still keep it). A
    finished test run is judged by its start, as its purge does (its times are virtual)."""
    kept = AutomationRun.objects.filter(created_at__gte=lower, created_at__lt=upper).filter(
        ~Q(status__in=FINISHED_RUN_STATUSES)
        | Q(completed_at__isnull=True)
        | Q(execution_mode=ExecutionMode.LIVE, completed_at__gte=before)
    )
    return not kept.exists()
