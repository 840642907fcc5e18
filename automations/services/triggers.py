"""Where events meet automations: the handler that event processing calls for every event
(events/hooks.py, registered in automations/apps.py). It matches the contact's open
`wait_for_event` waits and starts runs of the active automations the event triggers, in
the event's processing transaction, and wakes the run workers after it commits.

Most events concern no automation, so the handler first asks an in-process map of the
project's triggers (the event names that start runs, and the names open waits may be
waiting for): an event whose name is in neither costs no query. A process rebuilds a
project's map (one query) when it has none, and when the project's stamp in the shared
cache changed: publish, pause, resume, archive and delete set a new stamp after they
commit. A process asks the cache at most once per `AUTOMATIONS_TRIGGER_MAP_TTL_SECONDS`
per project, so a change made elsewhere is seen within that time.
"""

import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.db import connection, models, transaction

from automations import conf
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
    WaitStatus,
)
from automations.queue import RUN_QUEUE
from config import clock
from config.workqueue.models import WorkStatus
from contacts.models import Contact
from events.models import Event, EventSource

logger = logging.getLogger(__name__)

STAMP_KEY = "automations:triggers:{project_id}"


@dataclass(frozen=True)
class Trigger:
    """What starting a run of one automation needs, read from its published version."""

    automation_id: uuid.UUID
    version_id: uuid.UUID
    start: str
    filter: Mapping[str, Any] | None
    reentry: str
    correlation_key: str | None


@dataclass
class ProjectTriggers:
    """A project's triggers by event name, and the event names its waits may wait for."""

    by_event: dict[str, tuple[Trigger, ...]] = field(default_factory=dict)
    wait_events: frozenset[str] = frozenset()
    stamp: Any = None
    checked_at: float = 0.0


_maps: dict[Any, ProjectTriggers] = {}
_maps_lock = threading.Lock()


def _stamp_key(project_id: Any) -> str:
    return STAMP_KEY.format(project_id=project_id)


def _shared_stamp(project_id: Any) -> Any:
    try:
        return cache.get(_stamp_key(project_id))
    except Exception:
        logger.warning("The trigger stamp could not be read; rebuilding", exc_info=True)
        return object()  # never equal: rebuild


def _build(project_id: Any, stamp: Any) -> ProjectTriggers:
    """One query: the published and superseded versions of the project's automations that
    are neither archived nor deleted. Published versions of active automations are the
    triggers; every such version's `wait_for_event` steps name events that runs in
    progress (which finish on the version they started with) may be waiting for."""
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
    for automation_id, version_id, state, definition, status in rows:
        steps = definition.get("steps", [])
        wait_events.update(
            step["event"] for step in steps if step.get("type") == StepType.WAIT_FOR_EVENT
        )
        if state != AutomationVersionState.PUBLISHED or status != AutomationStatus.ACTIVE:
            continue
        settings = definition.get("settings") or {}
        trigger = definition["trigger"]
        by_event.setdefault(trigger["event"], []).append(
            Trigger(
                automation_id=automation_id,
                version_id=version_id,
                start=definition["start"],
                filter=trigger.get("filter"),
                reentry=settings.get("reentry", "always"),
                correlation_key=settings.get("correlation_key"),
            )
        )
    return ProjectTriggers(
        by_event={name: tuple(each) for name, each in by_event.items()},
        wait_events=frozenset(wait_events),
        stamp=stamp,
        checked_at=time.monotonic(),
    )


def project_triggers(project_id: Any) -> ProjectTriggers:
    """The project's map, rebuilt when missing or when the shared stamp moved."""
    entry = _maps.get(project_id)
    now = time.monotonic()
    if entry is not None and now - entry.checked_at < conf.trigger_map_ttl_seconds():
        return entry
    stamp = _shared_stamp(project_id)
    if entry is not None and entry.stamp == stamp:
        entry.checked_at = now
        return entry
    entry = _build(project_id, stamp)
    with _maps_lock:
        _maps[project_id] = entry
    return entry


def triggers_changed(*, project_id: Any) -> None:
    """Tells every process, after the caller's transaction commits, that the project's
    automations changed: this process forgets its map now and again after the commit,
    others when they next ask the cache."""

    def forget() -> None:
        with _maps_lock:
            _maps.pop(project_id, None)

    def publish() -> None:
        forget()
        try:
            cache.set(_stamp_key(project_id), uuid.uuid4().hex, timeout=None)
        except Exception:
            logger.warning("The trigger stamp could not be written", exc_info=True)

    forget()
    transaction.on_commit(publish)


def triggers_forget_local() -> None:
    """Drops this process's maps (tests)."""
    with _maps_lock:
        _maps.clear()


# --- the handler ---------------------------------------------------------------------------


def contact_facts(contact: Contact | None) -> dict[str, Any]:
    """What conditions read as `contact.…`."""
    if contact is None:
        return {}
    return {
        "id": str(contact.id) if contact.pk is not None else None,
        "email": contact.email,
        "external_id": contact.external_id,
        "fields": dict(contact.fields or {}),
    }


def automations_event_handle(*, event: Event, contact: Contact | None) -> None:
    """Event processing's handler: completes the contact's waits for this event, then
    starts the runs it triggers. Runs need a contact: an event without one (a system event
    about no contact) concerns no automation."""
    if contact is None:
        return
    triggers = project_triggers(event.project_id)
    woken = False
    if event.event in triggers.wait_events:
        woken = waits_match(event=event, contact=contact)
    started = triggers.by_event.get(event.event)
    if started:
        woken = runs_start(event=event, contact=contact, triggers=started) or woken
    if woken:
        transaction.on_commit(RUN_QUEUE.wake)


def _insert_or_skip(instance: models.Model) -> bool:
    """Inserts the row unless a unique key already holds it (`ON CONFLICT DO NOTHING`), in
    one round trip; whether it was inserted."""
    meta = instance._meta
    quote = connection.ops.quote_name
    # Keys the database numbers itself are left to it.
    fields = [f for f in meta.concrete_fields if not isinstance(f, models.AutoField)]
    columns = ", ".join(quote(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    values = [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]
    assert meta.pk is not None
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({marks}) "  # noqa: S608
        f"ON CONFLICT DO NOTHING RETURNING {quote(meta.pk.column)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        return cursor.fetchone() is not None


def _identity(event: Event, contact: Contact) -> tuple[str, str]:
    """How the event named its contact, in the order identity resolution tried."""
    if event.source == EventSource.SYSTEM or event.contact_ref == contact.id:
        return IdentityType.CONTACT_ID, str(contact.id)
    if event.external_id and event.external_id == contact.external_id:
        return IdentityType.EXTERNAL_ID, event.external_id
    return IdentityType.EMAIL, contact.email or ""


def runs_start(*, event: Event, contact: Contact, triggers: tuple[Trigger, ...]) -> bool:
    """Starts a run of each automation whose trigger filter the event passes and whose
    reentry rule lets the contact in; whether any started. Everything is a unique key:
    the run's (automation, trigger event), and for `once` / `once_per_correlation` the
    contact's entry, inserted first, so two events racing for one contact start one run."""
    now = clock.now()
    facts = {"payload": event.payload, "contact": contact_facts(contact)}
    identity_type, identity_value = _identity(event, contact)
    started = False
    for trigger in triggers:
        if not condition_holds(trigger.filter, facts):
            continue
        correlation = (
            payload_value(event.payload, trigger.correlation_key)
            if trigger.correlation_key
            else None
        )
        run_id = uuid.uuid4()
        entry = None
        if trigger.reentry in ("once", "once_per_correlation"):
            if trigger.reentry == "once_per_correlation" and correlation is None:
                # Without a value there is nothing to be once per.
                continue
            entry = AutomationEntry(
                automation_id=trigger.automation_id,
                contact=contact,
                correlation_value=correlation if trigger.reentry != "once" else None,
                run_id=run_id,
                created_at=now,
            )
            if not _insert_or_skip(entry):
                continue
        run = AutomationRun(
            id=run_id,
            project_id=event.project_id,
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
            status=RunStatus.PENDING,
            current_step_key=trigger.start,
            created_at=now,
            updated_at=now,
        )
        if not _insert_or_skip(run):
            # This event already started a run of the automation (processed again).
            if entry is not None:
                AutomationEntry.objects.filter(
                    automation_id=trigger.automation_id, run_id=run_id
                ).delete()
            continue
        RunJob.objects.create(run_id=run_id, next_attempt_at=now, created_at=now)
        started = True
    return started


def waits_match(*, event: Event, contact: Contact) -> bool:
    """Completes the contact's open waits for this event: those whose correlation value (if
    any) the event's payload holds at the same path, and whose deadline the event did not
    miss. The runs are locked before their waits, the order every writer of waits keeps;
    each matched run is `running` again and its job due now. Whether any matched."""
    candidates = [
        wait
        for wait in RunWait.objects.filter(
            contact=contact, event=event.event, status=WaitStatus.WAITING
        ).only("id", "run_id", "correlation_key", "correlation_value", "timeout_at")
        if wait.timeout_at > event.occurred_at
        and (
            wait.correlation_value is None
            or payload_value(event.payload, wait.correlation_key or "") == wait.correlation_value
        )
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
            f"UPDATE {table} SET status = %s, next_attempt_at = %s, attempts = 0 "  # noqa: S608
            f"WHERE run_id IN (SELECT run_id FROM {table} WHERE run_id = ANY(%s) "
            "AND status <> %s FOR UPDATE SKIP LOCKED)",
            [WorkStatus.ACCEPTED, now, list(run_ids), WorkStatus.PROCESSING],
        )
