"""Adding to the report's counts (`ReportCount`), in the caller's transaction: every change
of a live run that a report counts (it entered, entered a step, completed a step, took a
split branch, converted) adds here in the same transaction, so the report never reads
the runs.

One statement per call, its rows in key order, into the shard of the session's server
process (`pg_backend_pid() % REPORT_SHARDS`), as the step entries are counted
(step_entries.py): workers counting runs of one automation at once add to different rows.
"""

import datetime as dt
import functools
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection

from automations.models import (
    REPORT_SHARDS,
    AutomationRun,
    ExecutionMode,
    ReportCount,
    RunStatus,
    RunStep,
    StepStatus,
)

# The step type of splits (a branch per share of contacts).
SPLIT = "split"


@dataclass(frozen=True, order=True)
class CountKey:
    """One row of counts (whatever its shard)."""

    automation_id: uuid.UUID
    day: dt.date
    holdout: bool = False
    step_key: str = ""
    branch_key: str = ""


class ReportCounts:
    """Counts to add, gathered: `entered`, `completed` and `converted` by key."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.entered: Counter[CountKey] = Counter()
        self.completed: Counter[CountKey] = Counter()
        self.converted: Counter[CountKey] = Counter()

    def __bool__(self) -> bool:
        return bool(self.entered or self.completed or self.converted)

    def add(
        self, key: CountKey, *, entered: int = 0, completed: int = 0, converted: int = 0
    ) -> None:
        if entered:
            self.entered[key] += entered
        if completed:
            self.completed[key] += completed
        if converted:
            self.converted[key] += converted

    def write(self) -> None:
        """Adds what was gathered (one statement) and starts afresh."""
        keys = sorted(set(self.entered) | set(self.completed) | set(self.converted))
        if keys:
            params: list[Any] = []
            for key in keys:
                params += [
                    key.automation_id,
                    key.day,
                    key.holdout,
                    key.step_key,
                    key.branch_key,
                    self.entered[key],
                    self.completed[key],
                    self.converted[key],
                ]
            with connection.cursor() as cursor:
                cursor.execute(_upsert_sql(len(keys)), params)
        self._clear()


def entry_day(run: AutomationRun) -> dt.date:
    """The day (UTC) a run's counts belong to: the day it entered."""
    return (run.entered_at or run.created_at).astimezone(dt.UTC).date()


def counted(run: AutomationRun) -> bool:
    """Whether the report counts the run: live runs only (test runs are simulations)."""
    return run.execution_mode == ExecutionMode.LIVE


def run_key(run: AutomationRun, *, step_key: str = "", branch_key: str = "") -> CountKey:
    return CountKey(
        automation_id=run.automation_id,
        day=entry_day(run),
        holdout=run.status == RunStatus.HOLDOUT and not step_key,
        step_key=step_key,
        branch_key=branch_key,
    )


_COLUMNS = ("automation_id", "day", "holdout", "step_key", "branch_key", "shard")
_COUNTS = ("entered", "completed", "converted")


@functools.lru_cache(maxsize=64)
def _upsert_sql(rows: int) -> str:
    table, quote = quote_table(), connection.ops.quote_name
    values = ", ".join(
        [f"(%s, %s, %s, %s, %s, pg_backend_pid() %% {REPORT_SHARDS}, %s, %s, %s)"] * rows
    )
    columns = ", ".join(quote(name) for name in (*_COLUMNS, *_COUNTS))
    conflict = ", ".join(quote(name) for name in _COLUMNS)
    sets = ", ".join(
        f"{quote(name)} = {table}.{quote(name)} + EXCLUDED.{quote(name)}" for name in _COUNTS
    )
    # S608: names from the model, values bound.
    return (
        f"INSERT INTO {table} ({columns}) VALUES {values} "  # noqa: S608
        f"ON CONFLICT ({conflict}) DO UPDATE SET {sets}"
    )


def quote_table() -> str:
    return connection.ops.quote_name(ReportCount._meta.db_table)


def steps_counted(
    inserted: list[RunStep], changed: list[RunStep], runs: Mapping[Any, AutomationRun]
) -> None:
    """Adds the steps an engine's writes store: a first visit enters its step (and its
    split branch), converted already if the run is; a first visit completed, at once or
    when its wait resolved, completes it. One statement, none without live runs."""
    counts = ReportCounts()
    for row in inserted:
        run = row.run
        if row.visit != 1 or not counted(run):
            continue
        converted = 1 if run.converted_at is not None else 0
        key = run_key(run, step_key=row.step_key)
        done = 1 if row.status == StepStatus.COMPLETED else 0
        counts.add(key, entered=1, completed=done, converted=converted)
        if row.type == SPLIT and row.outcome:
            branch = run_key(run, step_key=row.step_key, branch_key=row.outcome)
            counts.add(branch, entered=1, converted=converted)
    for row in changed:
        owner = runs.get(row.run_id)
        if row.visit != 1 or owner is None or not counted(owner):
            continue
        if row.status == StepStatus.COMPLETED:
            counts.add(run_key(owner, step_key=row.step_key), completed=1)
    counts.write()
