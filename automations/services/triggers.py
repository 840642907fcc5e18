"""Where events meet automations: the batch handler of event processing (events/hooks.py,
registered in automations/apps.py). It matches the contact's open `wait_for_event` waits
and starts runs of the active automations the events trigger, in the batch's processing
transaction (the runs of a batch in one insert), and wakes the run workers after it
commits.

Most events concern no automation, so the handler first asks an in-process map of the
project's triggers (the event names that start runs, and the names open waits may be
waiting for): an event whose name is in neither costs no query. The map is exact, not
trusted for a time: publish, pause, resume, archive and delete write a new stamp for the
project (`TriggerStamp`) in their own transaction, and a batch reads the stamps of its
projects once (one statement) inside its processing transaction, rebuilding a map (one
query) when its stamp differs from the one the map was built at. The batch's events were claimed, so
accepted, before that read: an event accepted after a change committed is matched
against the change, whichever process handles it.
"""

import logging
import threading
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

from automations.definition.audiences import trigger_audience, trigger_event_of
from automations.definition.conditions import condition_holds, payload_value
from automations.models import (
    AutomationEntry,
    AutomationRun,
    AutomationStatus,
    AutomationVersion,
    AutomationVersionState,
    ExecutionMode,
    IdentityType,
    RunJob,
    RunStatus,
    RunWait,
    StepType,
    TriggerStamp,
    WaitStatus,
)
from automations.queue import RUN_QUEUE
from automations.services.facts import contact_facts
from automations.services.goals import VersionGoal, goal_from, holdout_chosen, runs_convert
from automations.services.loads import Fresh
from automations.services.report_counts import ReportCounts, run_key
from config.db.bulk import rows_insert
from config.runtime import clock
from config.workqueue.models import WorkStatus
from contacts.models import Contact
from events.models import Event, EventSource
from tenancy.models import Meter
from tenancy.usage import usage_record

logger = logging.getLogger(__name__)

_STAMP_TABLE = connection.ops.quote_name(TriggerStamp._meta.db_table)
# S608: the table name is the model's own.
_STAMPS_READ = f"SELECT project_id, stamp FROM {_STAMP_TABLE} WHERE project_id = ANY(%s)"  # noqa: S608
_STAMP_WRITE = (
    # S608: the table name is the model's own.
    f"INSERT INTO {_STAMP_TABLE} (project_id, stamp) VALUES (%s, %s) "  # noqa: S608
    "ON CONFLICT (project_id) DO UPDATE SET stamp = EXCLUDED.stamp"
)


@dataclass(frozen=True)
class Trigger:
    """What starting a run of one automation needs, read from its published version."""

    automation_id: uuid.UUID
    version_id: uuid.UUID
    start: str
    filter: Mapping[str, Any] | None
    reentry: str
    correlation_key: str | None
    # `settings.holdout_percent`: the share of entering contacts held out.
    holdout_percent: float = 0
    # An audience trigger's audience: the event's `payload.audience_id` must be it.
    audience_id: str | None = None


@dataclass
class ProjectTriggers:
    """A project's triggers by event name, the event names its waits may wait for, and
    the goals by event name (of every version runs may still be on), as of the project's
    `stamp`."""

    by_event: dict[str, tuple[Trigger, ...]] = field(default_factory=dict)
    wait_events: frozenset[str] = frozenset()
    goal_events: dict[str, tuple[VersionGoal, ...]] = field(default_factory=dict)
    stamp: Any = None


_maps: dict[Any, ProjectTriggers] = {}
_maps_lock = threading.Lock()


def _stamps_read(project_ids: list[Any]) -> dict[Any, Any]:
    """The projects' stamps as committed now (none: the automations never changed)."""
    with connection.cursor() as cursor:
        cursor.execute(_STAMPS_READ, [project_ids])
        return dict(cursor.fetchall())


def _build(project_id: Any, stamp: Any) -> ProjectTriggers:
    """One query: the published and superseded versions of the project's automations that
    are neither archived nor deleted. Published versions of active automations are the
    triggers; every such version's `wait_for_event` steps name events that runs in
    progress (which finish on the version they started with) may be waiting for. Run
    after `stamp` was read, so the map is at least as new as its stamp."""
    rows = (
        AutomationVersion.objects.filter(
            automation__project_id=project_id,
            automation__deleted_at__isnull=True,
            state__in=[AutomationVersionState.PUBLISHED, AutomationVersionState.SUPERSEDED],
        )
        .exclude(automation__status=AutomationStatus.ARCHIVED)
        .values_list("automation_id", "id", "state", "definition", "automation__status")
    )
    by_event: dict[str, list[Trigger]] = {}
    wait_events: set[str] = set()
    goal_events: dict[str, list[VersionGoal]] = {}
    for automation_id, version_id, state, definition, status in rows:
        steps = definition.get("steps", [])
        wait_events.update(
            step["event"] for step in steps if step.get("type") == StepType.WAIT_FOR_EVENT
        )
        goal = goal_from(definition)
        if goal is not None:
            goal_events.setdefault(goal.event, []).append(
                VersionGoal(automation_id=automation_id, version_id=version_id, goal=goal)
            )
        if state != AutomationVersionState.PUBLISHED or status != AutomationStatus.ACTIVE:
            continue
        settings = definition.get("settings") or {}
        trigger = definition["trigger"]
        by_event.setdefault(trigger_event_of(trigger), []).append(
            Trigger(
                automation_id=automation_id,
                version_id=version_id,
                start=definition["start"],
                filter=trigger.get("filter"),
                reentry=settings.get("reentry", "always"),
                correlation_key=settings.get("correlation_key"),
                holdout_percent=settings.get("holdout_percent", 0),
                audience_id=trigger_audience(trigger),
            )
        )
    return ProjectTriggers(
        by_event={name: tuple(each) for name, each in by_event.items()},
        wait_events=frozenset(wait_events),
        goal_events={name: tuple(each) for name, each in goal_events.items()},
        stamp=stamp,
    )


def projects_triggers(project_ids: set[Any]) -> dict[Any, ProjectTriggers]:
    """The projects' maps as of the stamps committed now: this process's, or rebuilt for
    a project it has none of or whose stamp moved. One statement for the stamps, plus a
    build per map that moved; called once per batch, inside the batch's transaction."""
    if not project_ids:
        return {}
    stamps = _stamps_read(list(project_ids))
    found = {}
    for project_id in project_ids:
        stamp = stamps.get(project_id)
        entry = _maps.get(project_id)
        if entry is None or entry.stamp != stamp:
            entry = _build(project_id, stamp)
            with _maps_lock:
                _maps[project_id] = entry
        found[project_id] = entry
    return found


def project_triggers(project_id: Any) -> ProjectTriggers:
    """One project's map as of the stamp committed now (`projects_triggers`)."""
    return projects_triggers({project_id})[project_id]


def triggers_changed(*, project_id: Any) -> None:
    """Records, in the caller's transaction, that the project's automations changed: a
    new stamp, seen by every process's next batch once the transaction commits. Call it
    last in the change: the stamp's row stays locked until the commit, which orders
    concurrent changes of one project."""
    with connection.cursor() as cursor:
        cursor.execute(_STAMP_WRITE, [project_id, uuid.uuid4()])
    with _maps_lock:
        _maps.pop(project_id, None)


def triggers_forget_local() -> None:
    """Drops this process's maps (tests that make automations without a lifecycle
    change, so without a new stamp)."""
    with _maps_lock:
        _maps.clear()


# --- the handler ---------------------------------------------------------------------------


class AutomationsEventBatch:
    """Event processing's batch handler (events/hooks.py): completes the contact's waits
    for each event as it comes (one query, and only for event names a wait may wait
    for), and gathers the runs the events start, inserted together by `flush`. Runs need
    a contact: an event without one (a system event about no contact) concerns no
    automation. The trigger maps of the batch's projects are looked up once, together,
    when the batch begins."""

    def __init__(self) -> None:
        self.maps: dict[Any, ProjectTriggers] = {}
        self.starts: list[Start] = []
        self.woken = False

    def begin(self, *, events: list[Event]) -> None:
        self.maps = projects_triggers({event.project_id for event in events})

    def handle(self, *, event: Event, contact: Contact | None) -> None:
        if contact is None:
            return
        triggers = self.maps.get(event.project_id)
        if triggers is None:
            triggers = self.maps[event.project_id] = project_triggers(event.project_id)
        if event.event in triggers.wait_events and waits_match(event=event, contact=contact):
            self.woken = True
        goals = triggers.goal_events.get(event.event)
        if goals:
            ending = runs_convert(event=event, contact=contact, goals=goals)
            if ending:
                # `exit_on_goal`: the engine ends them at once (waiting or not).
                jobs_due(run_ids=ending, now=clock.now())
                self.woken = True
        started = triggers.by_event.get(event.event)
        if started:
            self.starts += runs_planned(event=event, contact=contact, triggers=started)

    def flush(self) -> None:
        starts, self.starts = self.starts, []
        if starts and runs_start(starts=starts):
            self.woken = True
        if self.woken:
            self.woken = False
            transaction.on_commit(RUN_QUEUE.wake)


def _identity(event: Event, contact: Contact) -> tuple[str, str]:
    """How the event named its contact, in the order identity resolution tried."""
    if event.source == EventSource.SYSTEM or event.contact_ref == contact.id:
        return IdentityType.CONTACT_ID, str(contact.id)
    if event.external_id and event.external_id == contact.external_id:
        return IdentityType.EXTERNAL_ID, event.external_id
    return IdentityType.EMAIL, contact.email or ""


# New rows without Model.__init__ (loads.py), which asked the database routers about
# every related instance given: a started run cost that three times over.
NEW_ENTRY = Fresh(AutomationEntry)
NEW_RUN = Fresh(AutomationRun)
NEW_JOB = Fresh(RunJob)


@dataclass(frozen=True)
class Start:
    """A run an event starts (not stored yet), and the contact's entry when the reentry
    rule needs one."""

    run: AutomationRun
    entry: AutomationEntry | None


def runs_planned(*, event: Event, contact: Contact, triggers: tuple[Trigger, ...]) -> list[Start]:
    """The runs of the automations whose trigger filter the event passes (and that have
    a correlation value where `once_per_correlation` needs one), for `runs_start`."""
    now = clock.now()
    facts = {"payload": event.payload, "contact": contact_facts(contact)}
    identity_type, identity_value = _identity(event, contact)
    planned = []
    for trigger in triggers:
        if trigger.audience_id is not None and not _of_audience(event, trigger.audience_id):
            continue
        if not condition_holds(trigger.filter, facts):
            continue
        correlation = (
            payload_value(event.payload, trigger.correlation_key)
            if trigger.correlation_key
            else None
        )
        run_id = uuid.uuid4()
        held_out = holdout_chosen(
            contact_id=contact.id,
            automation_id=trigger.automation_id,
            percent=trigger.holdout_percent,
        )
        entry = None
        if trigger.reentry in ("once", "once_per_correlation"):
            if trigger.reentry == "once_per_correlation" and correlation is None:
                # Without a value there is nothing to be once per.
                continue
            entry = NEW_ENTRY.make(
                automation_id=trigger.automation_id,
                contact=contact,
                correlation_value=correlation if trigger.reentry != "once" else None,
                run_id=run_id,
                created_at=now,
            )
        run = NEW_RUN.make(
            id=run_id,
            project=event.project,
            automation_id=trigger.automation_id,
            version_id=trigger.version_id,
            contact=contact,
            trigger_event_id=event.id,
            trigger_event_name=event.event,
            trigger_payload=event.payload,
            resolved_identity_type=identity_type,
            resolved_identity_value=identity_value[:320],
            correlation_key=trigger.correlation_key,
            correlation_value=correlation,
            execution_mode=ExecutionMode.LIVE,
            # A holdout run takes no step: it is over at once, only its conversion is
            # tracked (its job's one advance looks for goal events already processed).
            status=RunStatus.HOLDOUT if held_out else RunStatus.PENDING,
            current_step_key=None if held_out else trigger.start,
            completed_at=now if held_out else None,
            entered_at=event.created_at,
            created_at=now,
            updated_at=now,
        )
        planned.append(Start(run=run, entry=entry))
    return planned


def _of_audience(event: Event, audience_id: str) -> bool:
    """Whether an audience event is about this audience."""
    payload = event.payload if isinstance(event.payload, dict) else {}
    return str(payload.get("audience_id", "")).lower() == audience_id


def runs_start(*, starts: list[Start]) -> bool:
    """Stores the planned runs that their unique keys let in, with their jobs (due now);
    whether any started. Everything is a unique key, met with `ON CONFLICT DO NOTHING`
    (earlier starts of the same call first): for `once` / `once_per_correlation` the
    contact's entry, inserted before the run, so two events racing for one contact start
    one run; then the run's (automation, trigger event), so an event processed again
    starts nothing (and the entry it took is given back). Then the runs are added to the
    report's counts. Four statements for any number of runs, five when an event was
    processed again."""
    entries = [start.entry for start in starts if start.entry is not None]
    entered = rows_insert(AutomationEntry, entries, skip_conflicts=True, returning="run")
    runs = [start.run for start in starts if start.entry is None or start.run.id in entered]
    started = rows_insert(AutomationRun, runs, skip_conflicts=True)
    given_back = [run_id for run_id in entered if run_id not in started]
    if given_back:
        AutomationEntry.objects.filter(run_id__in=given_back).delete()
    if not started:
        return False
    now = clock.now()
    new = [run for run in runs if run.id in started]
    rows_insert(
        RunJob, [NEW_JOB.make(run_id=run.id, next_attempt_at=now, created_at=now) for run in new]
    )
    counts = ReportCounts()
    for run in new:
        counts.add(run_key(run), entered=1)
    counts.write()
    # Metered after the batch's processing commits (a retried attempt counts once).
    by_project = Counter(run.project_id for run in new)
    projects = {run.project_id: run.project for run in new}
    for project_id, count in by_project.items():
        usage_record(project=projects[project_id], meter=Meter.RUNS_STARTED, count=count)
    return True


def wait_correlates(wait: RunWait, payload: Any) -> bool:
    """Whether an event's payload holds the wait's correlation value (if it has one) at
    the same path."""
    return wait.correlation_value is None or (
        payload_value(payload, wait.correlation_key or "") == wait.correlation_value
    )


def waits_match(*, event: Event, contact: Contact) -> bool:
    """Completes the contact's open waits for this event: those whose correlation value (if
    any) the event's payload holds at the same path, and that were open when the event
    was accepted (from their `created_at`, included, to their deadline, excluded),
    however late it is processed (the engine does not time out a wait while such an
    event is unprocessed). The runs are locked before their waits, the
    order every writer of waits keeps; each matched run is `running` again and its job
    due now. Whether any matched."""
    candidates = [
        wait
        for wait in RunWait.objects.filter(
            contact=contact, event=event.event, status=WaitStatus.WAITING
        ).only("id", "run_id", "correlation_key", "correlation_value", "timeout_at", "created_at")
        if wait.created_at <= event.created_at < wait.timeout_at
        and wait_correlates(wait, event.payload)
    ]
    if not candidates:
        return False
    now = clock.now()
    waiting = set(
        AutomationRun.objects.select_for_update()
        .filter(id__in={wait.run_id for wait in candidates}, status=RunStatus.WAITING)
        .order_by("id")
        .values_list("id", flat=True)
    )
    matched = [wait.id for wait in candidates if wait.run_id in waiting]
    if not matched:
        return False
    RunWait.objects.filter(id__in=matched, status=WaitStatus.WAITING).update(
        status=WaitStatus.MATCHED,
        matched_event_id=event.id,
        matched_payload=event.payload,
        resolved_at=now,
    )
    run_ids = [wait.run_id for wait in candidates if wait.id in set(matched)]
    AutomationRun.objects.filter(id__in=run_ids).update(status=RunStatus.RUNNING, updated_at=now)
    jobs_due(run_ids=run_ids, now=now)
    return True


def jobs_due(*, run_ids: list[Any], now: Any) -> None:
    """Makes the runs' jobs due now, with fresh attempts. A job a worker holds is left
    alone: that worker locks the run next and sees what changed."""
    if not run_ids:
        return
    table = connection.ops.quote_name(RunJob._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            # S608: the table name is the model's own.
            f"UPDATE {table} SET status = %s, next_attempt_at = %s, attempts = 0 "  # noqa: S608
            f"WHERE run_id IN (SELECT run_id FROM {table} WHERE run_id = ANY(%s) "
            "AND status <> %s FOR UPDATE SKIP LOCKED)",
            [WorkStatus.ACCEPTED, now, list(run_ids), WorkStatus.PROCESSING],
        )
