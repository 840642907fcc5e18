"""Cancellation of runs: one on request, or all of an automation's runs in progress when
it is archived or deleted.

A run that is `pending` or `waiting` is held by no worker, so it is canceled at once
(with its open waits); a `running` one only gets `cancellation_requested_at`, and the
engine stops it at its next step boundary. The engine moves runs and waits with
conditional updates (expected status in the WHERE clause), so a run canceled here is
never picked up again: its claim, wait match or timeout finds zero rows.
"""

import uuid
from typing import Any

from django.db import transaction
from django.db.models import QuerySet, Value
from django.db.models.functions import Coalesce

from automations.errors import RunFinished
from automations.models import (
    FINISHED_RUN_STATUSES,
    Automation,
    AutomationRun,
    ExecutionMode,
    RunJob,
    RunStatus,
    RunStep,
    RunWait,
    StepStatus,
    TerminalReason,
    WaitStatus,
)
from automations.queue import RUN_QUEUE
from automations.selectors import automation_get, automation_run_get
from config.api.errors import or_404
from config.runtime import clock
from config.workqueue.models import WorkStatus
from contacts.models import Contact
from tenancy.models import Project

# Runs no worker holds: they can be ended on the spot.
IDLE_RUN_STATUSES = (RunStatus.PENDING, RunStatus.WAITING)


def _end_idle(runs: QuerySet[AutomationRun], *, terminal_reason: str, reason: str | None) -> int:
    """Cancels the idle runs among `runs` now, with their open waits and steps. The runs
    are locked first, in key order: event processing (matching waits) and the engine lock
    a run before its waits too, so none of them can deadlock with this."""
    now = clock.now()
    locked = list(
        runs.filter(status__in=IDLE_RUN_STATUSES)
        .select_for_update()
        .order_by("id")
        .values_list("id", flat=True)
    )
    if not locked:
        return 0
    idle = AutomationRun.objects.filter(id__in=locked, status__in=IDLE_RUN_STATUSES)
    RunWait.objects.filter(run__in=idle, status=WaitStatus.WAITING).update(
        status=WaitStatus.CANCELED, resolved_at=now
    )
    RunStep.objects.filter(
        run__in=idle, status__in=[StepStatus.RUNNING, StepStatus.WAITING, StepStatus.DEFERRED]
    ).update(status=StepStatus.CANCELED, completed_at=now)
    values: dict[str, Any] = {
        "status": RunStatus.CANCELED,
        "terminal_reason": terminal_reason,
        # A run asked to stop earlier keeps when and why it was asked.
        "cancellation_requested_at": Coalesce("cancellation_requested_at", Value(now)),
        "canceled_at": now,
        "completed_at": now,
        "updated_at": now,
    }
    if reason is not None:
        values["cancellation_reason"] = Coalesce("cancellation_reason", Value(reason))
    return idle.update(**values)


def _flag_running(runs: QuerySet[AutomationRun], *, reason: str | None) -> int:
    """Asks the engine to stop the running runs among `runs` at their next step."""
    now = clock.now()
    return runs.filter(status=RunStatus.RUNNING, cancellation_requested_at__isnull=True).update(
        cancellation_requested_at=now, cancellation_reason=reason, updated_at=now
    )


def runs_stop(*, automation: Automation, reason: str, archived: bool) -> int:
    """Cancels every run in progress of the automation (call with it locked); runs that
    end here say `terminal_reason: archived` when the automation was archived. Returns
    how many runs were stopped or asked to stop."""
    runs = AutomationRun.objects.filter(automation=automation)
    terminal_reason = TerminalReason.ARCHIVED if archived else TerminalReason.CANCELED
    ended = _end_idle(runs, terminal_reason=terminal_reason, reason=reason)
    return ended + _flag_running(runs, reason=reason)


def runs_of_deleted_contact(*, contact: Contact) -> int:
    """The contacts hook (automations/apps.py): a deleted contact's live runs in progress
    are canceled, as when their automation is archived."""
    runs = AutomationRun.objects.filter(contact=contact, execution_mode=ExecutionMode.LIVE)
    reason = "The contact was deleted."
    ended = _end_idle(runs, terminal_reason=TerminalReason.CANCELED, reason=reason)
    return ended + _flag_running(runs, reason=reason)


def runs_release(*, automation: Automation) -> int:
    """Makes the jobs of the runs a paused automation held due again (on resume)."""
    now = clock.now()
    count = RunJob.objects.filter(
        run__automation=automation,
        run__status=RunStatus.PENDING,
        status__in=[WorkStatus.PROCESSED, WorkStatus.DEAD_LETTERED],
    ).update(status=WorkStatus.ACCEPTED, next_attempt_at=now, attempts=0)
    if count:
        transaction.on_commit(RUN_QUEUE.wake)
    return count


def runs_cancel_by_staff(*, runs: QuerySet[AutomationRun], reason: str) -> int:
    """The console's cancel action: each run in progress among `runs` is canceled as by
    the API (pending and waiting ones at once, running ones at their next step)."""
    with transaction.atomic():
        ended = _end_idle(runs, terminal_reason=TerminalReason.CANCELED, reason=reason)
        return ended + _flag_running(runs, reason=reason)


def automation_run_cancel(
    *,
    project: Project,
    automation_id: uuid.UUID | str,
    run_id: uuid.UUID | str,
    reason: str | None = None,
) -> AutomationRun:
    """Cancels a run: at once when it is pending or waiting, at the engine's next step
    boundary when it is running. Asking again changes nothing; a finished run is 409."""
    automation = or_404(
        automation_get(project=project, automation_id=automation_id), "No such automation."
    )
    with transaction.atomic():
        run = (
            AutomationRun.objects.select_for_update()
            .filter(automation=automation, id=run_id)
            .first()
        )
        run = or_404(run, "No such run.")
        if run.status in FINISHED_RUN_STATUSES:
            raise RunFinished()
        one = AutomationRun.objects.filter(id=run.id)
        _end_idle(one, terminal_reason=TerminalReason.CANCELED, reason=reason)
        _flag_running(one, reason=reason)
    return or_404(automation_run_get(automation=automation, run_id=run.id), "No such run.")
