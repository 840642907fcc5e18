"""Goals and holdouts (CONTRACT section 20): which runs convert, and which contacts are
held out.

A run converts when an event of its version's goal (`goal.event`, passing `goal.filter`)
of its contact is accepted within `goal.within` of the run's entry (`entered_at`, the
trigger event's acceptance): both ends are acceptance times, never when a worker got to
an event, so a backlog changes nothing. Two ways meet every such event once:

- event processing (`runs_convert`, from the batch handler in triggers.py) converts the
  contact's runs already stored when the goal event is processed;
- a run's first advance (`runs_catch_up`, from the worker's batch in advance.py) reads
  the contact's goal events processed before the run was stored (in the trigger's own
  batch, or a batch that ran beside it) in the run's window: one statement per batch.

An event not processed yet when the run is stored is processed later and meets the run
stored. Converting is one conditional update (`converted_at IS NULL`), so the two ways
meeting one run convert it once; the report's counts (report_counts.py) are added by the
update that converted it, in its transaction. With `settings.exit_on_goal` the run's job
is made due and the engine ends the run (`terminal_reason: converted`) at its next
boundary, waiting or not (engine.py, `Engine.goal_reached`).

Holdouts: `holdout_chosen` hashes the contact and automation ids, so a contact is held
out of an automation always or never, whatever the event or the worker.
"""

import datetime as dt
import hashlib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection

from automations.definition.conditions import condition_holds
from automations.definition.durations import parse_duration
from automations.models import (
    FINISHED_RUN_STATUSES,
    AutomationRun,
    AutomationVersion,
    AutomationVersionState,
    ExecutionMode,
    RunStep,
)
from automations.services.facts import contact_facts
from automations.services.report_counts import SPLIT, ReportCounts, counted, run_key
from config.db.bulk import rows_fetch
from contacts.models import Contact
from events.models import Event
from events.selectors import EventWindow, events_in_windows

# Holdout shares are taken in hundredths of a percent: `holdout_percent` 12.5 holds out
# the contacts whose bucket (0-9999) is below 1250.
_BUCKETS = 10_000


@dataclass(frozen=True)
class Goal:
    """A version's goal, parsed."""

    event: str
    filter: Mapping[str, Any] | None
    within: dt.timedelta
    exit_on_goal: bool


@dataclass(frozen=True)
class VersionGoal:
    """A goal of one version (of one automation), as the trigger map keeps it."""

    automation_id: uuid.UUID
    version_id: uuid.UUID
    goal: Goal


def goal_from(definition: Mapping[str, Any]) -> Goal | None:
    """The definition's goal, or None."""
    goal = definition.get("goal")
    if not goal:
        return None
    within = parse_duration(goal["within"])
    if within is None:  # the definition checks refuse these
        return None
    settings = definition.get("settings") or {}
    return Goal(
        event=goal["event"],
        filter=goal.get("filter"),
        within=within,
        exit_on_goal=bool(settings.get("exit_on_goal", False)),
    )


_goals: dict[uuid.UUID, Goal | None] = {}
MAX_CACHED_GOALS = 1024


def goal_of(version: AutomationVersion) -> Goal | None:
    """The version's goal; kept per process for versions that never change."""
    if version.state == AutomationVersionState.DRAFT:
        return goal_from(version.definition)
    if version.id not in _goals:
        if len(_goals) >= MAX_CACHED_GOALS:
            _goals.clear()
        _goals[version.id] = goal_from(version.definition)
    return _goals[version.id]


def holdout_bucket(*, contact_id: uuid.UUID, automation_id: uuid.UUID) -> int:
    """The contact's bucket (0-9999) in the automation: a hash of both ids."""
    digest = hashlib.sha256(f"{automation_id}:{contact_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % _BUCKETS


def holdout_chosen(*, contact_id: uuid.UUID, automation_id: uuid.UUID, percent: float) -> bool:
    """Whether the contact is held out of the automation at `percent` (0-50)."""
    if percent <= 0:
        return False
    threshold = round(percent * _BUCKETS / 100)
    return holdout_bucket(contact_id=contact_id, automation_id=automation_id) < threshold


def _passes(goal: Goal, payload: Any, contact: Contact | None) -> bool:
    return condition_holds(goal.filter, {"payload": payload, "contact": contact_facts(contact)})


def runs_convert(*, event: Event, contact: Contact, goals: Iterable[VersionGoal]) -> list[Any]:
    """Converts the contact's live runs whose goal this event is (accepted within their
    window, passing the filter); the ids of the runs whose job must be made due
    (`exit_on_goal`, not finished). One query for the candidates (the contact's runs,
    by its index), and only for an event whose name is a goal."""
    by_version = {goal.version_id: goal.goal for goal in goals}
    passing = {
        version_id: goal
        for version_id, goal in by_version.items()
        if _passes(goal, event.payload, contact)
    }
    if not passing:
        return []
    accepted = event.created_at
    widest = max(goal.within for goal in passing.values())
    candidates = AutomationRun.objects.filter(
        contact=contact,
        version_id__in=list(passing),
        execution_mode=ExecutionMode.LIVE,
        converted_at__isnull=True,
        entered_at__lte=accepted,
        entered_at__gt=accepted - widest,
    ).values_list("id", "version_id", "entered_at")
    chosen = [
        run_id
        for run_id, version_id, entered_at in candidates
        if entered_at is not None
        and entered_at <= accepted < entered_at + passing[version_id].within
    ]
    if not chosen:
        return []
    converted = _converted(run_ids=chosen, event_id=event.id, accepted=accepted)
    return [
        run.id
        for run in converted
        if passing[run.version_id].exit_on_goal and run.status not in FINISHED_RUN_STATUSES
    ]


def runs_catch_up(runs: Iterable[AutomationRun], goals: Mapping[uuid.UUID, Goal]) -> None:
    """Converts runs (locked, on their first advance) by goal events of their contact
    processed before they were stored: one statement for the batch's windows. `goals`:
    the goal of each run's version that has one. Converted runs are updated in place."""
    waiting = [
        run
        for run in runs
        if run.version_id in goals
        and run.converted_at is None
        and run.entered_at is not None
        and run.contact_id is not None
        and run.execution_mode == ExecutionMode.LIVE
    ]
    if not waiting:
        return
    windows = [_window(run, goals[run.version_id]) for run in waiting]
    found = events_in_windows(windows=windows)
    by_event: dict[tuple[uuid.UUID, dt.datetime], list[AutomationRun]] = {}
    for run, held in zip(waiting, found, strict=True):
        goal = goals[run.version_id]
        for (event_id, payload), accepted in zip(held.processed, held.accepted, strict=True):
            if _passes(goal, payload, run.contact):
                by_event.setdefault((event_id, accepted), []).append(run)
                break
    for (event_id, accepted), chosen in by_event.items():
        converted = {
            row.id
            for row in _converted(
                run_ids=[run.id for run in chosen], event_id=event_id, accepted=accepted
            )
        }
        for run in chosen:
            if run.id in converted:
                run.converted_at, run.conversion_event_id = accepted, event_id


def _window(run: AutomationRun, goal: Goal) -> EventWindow:
    """The goal events of the run's contact accepted within its window."""
    entered = run.entered_at or run.created_at
    return EventWindow(
        project_id=run.project_id,
        contact_id=run.contact_id,
        event=goal.event,
        opened=entered,
        deadline=entered + goal.within,
    )


@dataclass(frozen=True)
class Converted:
    """A run a conversion changed, with what its counts need."""

    id: uuid.UUID
    automation_id: uuid.UUID
    version_id: uuid.UUID
    status: str
    entered_at: dt.datetime | None
    created_at: dt.datetime


_RUN_TABLE = connection.ops.quote_name(AutomationRun._meta.db_table)
# The conversion: only runs not converted yet (so two ways that meet one run convert it
# once), returning what the counts need. S608: the table name is the model's own.
_CONVERT_SQL = (
    f"UPDATE {_RUN_TABLE} SET converted_at = %b, conversion_event_id = %b "  # noqa: S608
    "WHERE id = ANY(%b) AND converted_at IS NULL "
    "RETURNING id, automation_id, version_id, status, entered_at, created_at"
)
_STEP_TABLE = connection.ops.quote_name(RunStep._meta.db_table)
# The steps the converted runs entered (first visits), in their partitions.
_ENTERED_STEPS_SQL = (
    f"SELECT run_id, step_key, type, outcome FROM {_STEP_TABLE} "  # noqa: S608
    "WHERE run_id = ANY(%b) AND run_created_at = ANY(%b) AND visit = 1"
)


def _converted(*, run_ids: list[Any], event_id: Any, accepted: Any) -> list[Converted]:
    """Converts the runs not converted yet (in key order, as every writer of runs locks
    them), and adds the conversions to the report's counts: the run's group, and every
    step the run entered so far (steps it enters later are counted as it enters them)."""
    rows = rows_fetch(_CONVERT_SQL, [accepted, event_id, sorted(run_ids)])
    converted = [Converted(*row) for row in rows]
    if not converted:
        return []
    counts = ReportCounts()
    runs = {}
    for each in converted:
        run = AutomationRun(
            id=each.id,
            automation_id=each.automation_id,
            status=each.status,
            entered_at=each.entered_at,
            created_at=each.created_at,
            execution_mode=ExecutionMode.LIVE,
        )
        runs[each.id] = run
        if counted(run):
            counts.add(run_key(run), converted=1)
    entered = rows_fetch(
        _ENTERED_STEPS_SQL,
        [list(runs), sorted({each.created_at for each in converted})],
    )
    for run_id, step_key, _type, outcome in entered:
        run = runs[run_id]
        counts.add(run_key(run, step_key=step_key), converted=1)
        branch = split_branch(_type, outcome)
        if branch is not None:
            counts.add(run_key(run, step_key=step_key, branch_key=branch), converted=1)
    counts.write()
    return converted


def split_branch(step_type: str, outcome: str | None) -> str | None:
    """The branch a step took, when it is a split's."""
    return outcome if step_type == SPLIT and outcome else None
