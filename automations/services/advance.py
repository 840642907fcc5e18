"""Advancing live runs on the work-queue kit: workers claim due jobs (runs just started,
waits matched by an event, waits whose deadline passed, runs released by a resume), lock
the runs and advance each one (engine.py) in the batch's transaction.

A job stays with its run for the run's whole life. After an advance it is `processed`
(the run ended, or is held by a paused automation) or due again at the deadline of the
wait the run parked on, with fresh attempts: so the kit's due index (`next_attempt_at` of
accepted jobs) is also the index of wait deadlines, and the claim that finds due runs is
the sweep that times waits out, an index range scan however many waits lie further ahead.
"""

import uuid
from collections.abc import Iterable
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

from automations.models import (
    Automation,
    AutomationRun,
    AutomationVersion,
    RunJob,
    RunStatus,
    RunStep,
    RunWait,
    WaitStatus,
)
from automations.queue import RUN_QUEUE
from automations.services.engine import Verdict, new_writes
from automations.services.goals import goal_of, runs_catch_up
from automations.services.history import History
from automations.services.liveengine import LiveEngine, awaited_windows
from automations.services.loads import Columns, cache_related
from automations.services.writes import Writes
from config.db.bulk import rows_fetch
from config.db.collector import collector_paused
from config.runtime import clock
from config.workqueue.models import WorkStatus
from config.workqueue.work import BatchOutcome, BatchWork, PerItem
from contacts.models import Contact
from events.selectors import WindowEvents
from messaging.services.policy import CapLedger, policy_of
from tenancy.models import Project

M = TypeVar("M", bound=Model)

__all__ = ["BatchOutcome", "runs_advance_batch", "runs_advance_due", "runs_claim"]


class AdvanceWork(BatchWork[RunJob]):
    """Locks the batch's runs (in key order, as event processing does) and loads their
    contacts, automations, versions, projects, timelines and waits in six queries, then
    advances each run. Run together, the
    advances' writes are gathered and written at the end, for the whole batch at once
    (automations/services/writes.py); run by run (after a failure), each advance writes
    its own inside its savepoint."""

    def begin(self, items: list[RunJob]) -> None:
        gathered: Writes | None = getattr(self, "writes", None)
        if gathered is not None:
            # The batch is redone run by run: what its first pass gathered is undone.
            gathered.discard()
        ids = sorted(item.pk for item in items)
        self.runs, steps, waits = _load_postgresql(ids)
        # Apart from the runs: a batch's runs share a few automations, versions and
        # projects, each then read once (a version's definition, up to 200 steps, parsed
        # once) instead of once per run. Read after the runs are locked, so as fresh.
        runs = self.runs.values()
        automations = _by_id(Automation, {run.automation_id for run in runs})
        versions = _by_id(AutomationVersion, {run.version_id for run in runs})
        projects = _by_id(Project, {run.project_id for run in runs})
        for run in runs:
            cache_related(run, "automation", automations[run.automation_id])
            cache_related(run, "version", versions[run.version_id])
            cache_related(run, "project", projects[run.project_id])
        self.histories = {
            run_id: History(steps.get(run_id, []), waits.get(run_id, [])) for run_id in self.runs
        }
        self.windows = _overdue_waits(self.runs.values(), self.histories)
        _goals_caught_up(self.runs.values())
        self.verdicts: dict[uuid.UUID, Verdict] = {}
        self.writes: Writes | None = None
        # The cap locks of every contact the batch may send to under a project with caps,
        # taken now, all at once and in key order: a send then only reads its count, and
        # two batches never wait for each other's locks in a cycle.
        self.caps = CapLedger()
        capped = {pk for pk, project in projects.items() if policy_of(project).caps}
        self.caps.lock(
            run.contact_id
            for run in runs
            if run.contact_id is not None and run.project_id in capped
        )

    def begin_together(self, items: list[RunJob]) -> None:
        self.writes = new_writes(likely=self.addresses, caps=self.caps)

    def addresses(self) -> list[tuple[Project, list[str]]]:
        """The batch's contacts' addresses by project: what its sends go to."""
        by_project: dict[uuid.UUID, tuple[Project, list[str]]] = {}
        for run in self.runs.values():
            if run.contact is not None and run.contact.email:
                by_project.setdefault(run.project_id, (run.project, []))[1].append(
                    run.contact.email
                )
        return list(by_project.values())

    def run(self, item: RunJob) -> None:
        run = self.runs.get(item.pk)
        if run is None:
            self.verdicts[item.pk] = Verdict("done")
            return
        engine = LiveEngine(
            run=run, history=self.histories[run.id], writes=self.writes, windows=self.windows
        )
        try:
            verdict = engine.advance()
            engine.save()
        except Exception:
            if self.writes is None:
                engine.writes.discard()
            raise
        self.verdicts[item.pk] = verdict

    def finish_together(self, items: list[RunJob]) -> None:
        assert self.writes is not None
        self.writes.flush()

    def dropped(self, item: RunJob) -> None:
        self.verdicts.pop(item.pk, None)

    def done_values(self, items: list[RunJob]) -> dict[str, Any]:
        statuses: dict[Any, str] = {}
        due: dict[Any, Any] = {}
        for item in items:
            verdict = self.verdicts[item.pk]
            parked = verdict.kind == "park"
            statuses[item.pk] = WorkStatus.ACCEPTED if parked else WorkStatus.PROCESSED
            due[item.pk] = verdict.until if parked else None
        # A parked job starts its next advance with fresh attempts: attempts count the
        # failures of one advance, not the waits of a long run.
        return {"status": PerItem(statuses), "next_attempt_at": PerItem(due), "attempts": 0}


def _overdue_waits(
    runs: Iterable[AutomationRun], histories: dict[uuid.UUID, History]
) -> dict[uuid.UUID, WindowEvents]:
    """The events accepted while each open `wait_for_event` wait of the batch's runs that
    is past its deadline was open (`engine.awaited_windows`): one statement, and only for
    a batch that has such a wait. Read after the runs are locked: an event processed since
    has already matched what it matches."""
    now = clock.now()
    overdue = []
    for run in runs:
        row = histories[run.id].steps.get(run.current_step_key or "")
        wait = histories[run.id].wait_of(row) if row is not None else None
        if (
            wait is not None
            and wait.status == WaitStatus.WAITING
            and wait.event is not None
            and wait.timeout_at <= now
        ):
            overdue.append(wait)
    return awaited_windows(overdue) if overdue else {}


def _goals_caught_up(runs: Iterable[AutomationRun]) -> None:
    """Converts the batch's runs on their first advance (holdout runs have only that one)
    by goal events of their contact processed before they were stored (goals.py): one
    statement, and only for a batch with such runs. Read after the runs are locked."""
    goals = {}
    first = []
    for run in runs:
        if run.converted_at is not None or (
            run.started_at is not None and run.status != RunStatus.HOLDOUT
        ):
            continue
        goal = goal_of(run.version)
        if goal is not None:
            goals[run.version_id] = goal
            first.append(run)
    if first:
        runs_catch_up(first, goals)


Loaded = tuple[
    dict[uuid.UUID, AutomationRun], dict[uuid.UUID, list[RunStep]], dict[uuid.UUID, list[RunWait]]
]


_LOCK_SQL = (
    "SELECT {runs}, {contacts} FROM {run_table} r "
    "LEFT JOIN {contact_table} c ON c.id = r.contact_id "
    "WHERE r.id = ANY(%b) ORDER BY r.id FOR UPDATE OF r"
)
_HISTORY_SQL = (
    "SELECT {columns} FROM {table} t WHERE t.run_id = ANY(%b){also} ORDER BY t.{order}, t.id"
)
# The steps' table is partitioned by the run's start: naming the runs' starts reads only
# their partitions.
_STEPS_PRUNED = " AND t.run_created_at = ANY(%b)"


def _load_postgresql(ids: list[uuid.UUID]) -> Loaded:
    """Locks the runs (in key order) with their contacts, then reads the timelines and
    waits of those already started: three statements, rows read in binary and made
    into instances without the ORM's per-row work (loads.py)."""
    quote = connection.ops.quote_name
    run_columns = Columns(AutomationRun, "r")
    contact_columns = Columns(Contact, "c")
    rows = rows_fetch(
        _LOCK_SQL.format(
            runs=run_columns.select,
            contacts=contact_columns.select,
            run_table=quote(AutomationRun._meta.db_table),
            contact_table=quote(Contact._meta.db_table),
        ),
        [ids],
    )
    runs: dict[uuid.UUID, AutomationRun] = {}
    width = run_columns.width
    for row in rows:
        run = run_columns.make(row[:width])
        contact = contact_columns.make(row[width:]) if run.contact_id is not None else None
        if contact is not None and contact.pk is None:
            contact = None  # no row joined: what `select_related` gives too
        cache_related(run, "contact", contact)
        runs[run.id] = run
    started = [run for run in runs.values() if run.started_at is not None]
    steps: dict[uuid.UUID, list[RunStep]] = {}
    waits: dict[uuid.UUID, list[RunWait]] = {}
    if started:
        ids = [run.id for run in started]
        starts = sorted({run.created_at for run in started})
        for model, order, into, also, params in (
            (RunStep, "sequence", steps, _STEPS_PRUNED, [ids, starts]),
            (RunWait, "created_at", waits, "", [ids]),
        ):
            columns: Columns[Any] = Columns(model, "t")
            history = rows_fetch(
                _HISTORY_SQL.format(
                    columns=columns.select,
                    table=quote(model._meta.db_table),
                    order=order,
                    also=also,
                ),
                params,
            )
            for row in history:
                instance = columns.make(row)
                into.setdefault(instance.run_id, []).append(instance)
    return runs, steps, waits


_BY_ID_SQL = "SELECT {columns} FROM {table} t WHERE t.id = ANY(%b)"


def _by_id(model: type[M], ids: set[uuid.UUID]) -> dict[uuid.UUID, M]:
    """Rows by primary key, as `in_bulk` (in binary: a batch reads three such sets, and
    the ORM's compiling of each cost more than the rows)."""
    columns = Columns(model, "t")
    table = connection.ops.quote_name(model._meta.db_table)
    rows = rows_fetch(_BY_ID_SQL.format(columns=columns.select, table=table), [list(ids)])
    return {instance.pk: instance for instance in columns.make_all(rows)}


def runs_claim(*, limit: int | None = None) -> tuple[uuid.UUID, list[RunJob]]:
    """Claims up to `limit` due jobs (and any whose lease expired) for this worker."""
    return RUN_QUEUE.claim(limit=limit)


def runs_advance_batch(*, limit: int | None = None) -> BatchOutcome:
    """Claims one batch of due runs and advances them."""
    with collector_paused():
        token, jobs = runs_claim(limit=limit)
        outcome = BatchOutcome(claimed=len(jobs))
        if jobs:
            RUN_QUEUE.run(token=token, items=jobs, work=AdvanceWork(), outcome=outcome)
    return outcome


def runs_advance_due(*, budget_seconds: float, limit: int | None = None) -> tuple[int, bool]:
    """Advances batches while runs are due, for at most `budget_seconds`; the number of
    jobs claimed and whether work was left."""
    return RUN_QUEUE.drain(
        lambda: runs_advance_batch(limit=limit).claimed, budget_seconds=budget_seconds
    )
