"""Committing an import: the execute of `imports.commit`, then its chunks applied by
workers on the work-queue kit.

The execute checks everything before it changes anything: it plans every chunk again
against the current contacts and compares each chunk's digest with the preview's, all
in one transaction that holds the import's row lock. One changed row (a contact
updated, created, deleted, given a membership or a subscription the plan did not
expect, an audience created meanwhile) is a 409 and nothing is applied. Only then are
the chunks made due.

A chunk is applied in one transaction together with the kit's record of it (and the
import's progress), so a worker killed mid-chunk commits nothing: the lease runs out,
another worker claims the chunk and applies it whole, and no row is applied twice.
Each chunk plans its rows again just before it writes, inside its transaction, so
writes made by others after the check merge with the import's as two API calls would
(the commit's writes are upserts and `ON CONFLICT DO NOTHING` inserts).
"""

import itertools
import uuid
from typing import Any

from django.db import transaction
from django.db.models import F

from config.api.errors import Conflict, NotFound
from config.db.collector import collector_paused
from config.runtime import clock
from config.workqueue.models import WorkStatus
from config.workqueue.queue import WorkQueue
from config.workqueue.work import BatchWork
from contacts.audiences.models import Audience
from contacts.audiences.services import audiences_ensure, memberships_add_many
from contacts.selectors import UpsertCandidate, contact_ids_by_identities
from contacts.services import contacts_upsert_many
from contacts.topics.models import SubscriptionSource, Topic
from contacts.topics.services import subscriptions_subscribe_many
from imports import conf
from imports.models import AutomationEffects, Import, ImportChunk, ImportStatus, RowStatus
from imports.selectors import import_chunks, import_rows_between
from imports.services.planning import (
    CONTACTS_CREATED,
    CONTACTS_UPDATED,
    MEMBERSHIPS_CREATED,
    SUBSCRIPTIONS_CREATED,
    Planner,
    RowPlan,
    chunks_planned,
)
from imports.services.preview import import_previewable_checked
from tenancy.errors import PreparedActionExpired
from tenancy.models import Project

IMPORT_QUEUE: WorkQueue[ImportChunk] = WorkQueue(
    model=ImportChunk,
    task="imports.commit_chunks",
    wake_key="imports:commit:wake",
    retry_policy=conf.retry_policy,
    # A chunk is thousands of rows: one per claim keeps each transaction bounded.
    batch_size=1,
    lease_seconds=conf.lease_seconds,
    order_by=("next_attempt_at", "first_row"),
    prefetch_related=("import_record", "import_record__project"),
)


# --- execute ------------------------------------------------------------------------------


def import_commit_start(
    *, project: Project, import_id: uuid.UUID | str, prepared_action_id: uuid.UUID
) -> Import:
    """Starts committing the import as its latest preview planned, inside the executing
    transaction of the prepared action: 409 `conflict` when any chunk's plan changed
    since (nothing is applied), else the chunks with changes become due and the import
    `committing` (`committed` at once when nothing changes)."""
    record = Import.objects.select_for_update().filter(project=project, id=import_id).first()
    if record is None:
        raise NotFound("No such import.")
    if record.prepared_action_id != prepared_action_id:
        raise PreparedActionExpired(
            "A newer preview of this import replaced this one; commit the latest preview."
        )
    import_previewable_checked(record, project)
    stored = list(import_chunks(record=record))
    fresh = chunks_planned(record=record, project=project)
    for chunk, plan in itertools.zip_longest(stored, fresh):
        if (
            chunk is None
            or plan is None
            or (chunk.first_row, chunk.digest)
            != (
                plan.first_row,
                plan.digest,
            )
        ):
            first = (chunk or plan).first_row
            raise Conflict(
                "Contacts changed since the preview; nothing was applied. Preview again.",
                details=f"The plan of the rows from row {first} on differs from the preview's.",
            )
    now = clock.now()
    due = [chunk.pk for chunk in stored if chunk.planned_rows]
    ImportChunk.objects.filter(pk__in=due).update(
        status=WorkStatus.ACCEPTED, attempts=0, next_attempt_at=now
    )
    ImportChunk.objects.filter(import_record=record).exclude(pk__in=due).update(
        status=WorkStatus.PROCESSED, next_attempt_at=None
    )
    record.commit_rows = sum(chunk.planned_rows for chunk in stored)
    record.committed_rows = 0
    record.chunks_total = len(due)
    record.chunks_done = 0
    record.committing_at = now
    record.last_error = None
    if due:
        record.status = ImportStatus.COMMITTING
        transaction.on_commit(IMPORT_QUEUE.wake)
    else:
        record.status = ImportStatus.COMMITTED
        record.committed_at = now
    record.save()
    return record


# --- applying chunks ----------------------------------------------------------------------


def _contact_ids(
    project: Project, planner: Planner, plans: list[RowPlan], written: dict[int, uuid.UUID]
) -> dict[int, uuid.UUID]:
    """The contact of every row that needs one (by row number): planned, just written,
    or, for a row someone else created meanwhile, looked up by identity."""
    ids = {plan.row.row_number: plan.contact_id for plan in plans if plan.contact_id}
    ids.update(written)
    missing = [plan for plan in plans if plan.counts and plan.row.row_number not in ids]
    if missing:
        found = contact_ids_by_identities(
            project=project,
            values=[plan.identity for plan in missing if plan.identity],
            by=planner.by,
        )
        for plan in missing:
            if plan.identity in found:
                ids[plan.row.row_number] = found[plan.identity]
    return ids


def import_chunk_apply(*, chunk: ImportChunk) -> None:
    """Applies one chunk's rows in the caller's transaction (the kit's): contacts created
    or merged, memberships and subscriptions added, each in one statement; with
    `automation_effects: trigger`, the system events an API call would record. Rows whose
    plan changes nothing are not touched and record nothing."""
    record = chunk.import_record
    project = record.project
    emit = record.automation_effects == AutomationEffects.TRIGGER
    rows = import_rows_between(record=record, first=chunk.first_row, last=chunk.last_row)
    planner = Planner(record=record, project=project, first_claims=False)
    names = {name for row in rows if row.status == RowStatus.VALID for name in row.audiences}
    if names:
        planner.audiences_known(audiences_ensure(project=project, names=names))
    plans = [plan for plan in planner.plan(rows) if plan.counts]
    writes = [
        plan for plan in plans if CONTACTS_CREATED in plan.counts or CONTACTS_UPDATED in plan.counts
    ]
    results = contacts_upsert_many(
        project=project,
        candidates=[
            UpsertCandidate(
                email=plan.row.email,
                external_id=plan.row.external_id,
                fields_json=plan.row.fields_json,
            )
            for plan in writes
        ],
        by=planner.by,
        emit=emit,
    )
    written = {
        plan.row.row_number: result[0]
        for plan, result in zip(writes, results, strict=True)
        if result is not None
    }
    ids = _contact_ids(project, planner, plans, written)
    memberships: set[tuple[Audience, uuid.UUID]] = set()
    subscriptions: set[tuple[Topic, uuid.UUID]] = set()
    for plan in plans:
        contact_id = ids.get(plan.row.row_number)
        if contact_id is None:
            continue
        if MEMBERSHIPS_CREATED in plan.counts:
            memberships.update(
                (planner.audiences[name.lower()], contact_id) for name in plan.row.audiences
            )
        if SUBSCRIPTIONS_CREATED in plan.counts:
            subscriptions.update(
                (planner.topics[name.lower()], contact_id) for name in plan.row.topics
            )
    memberships_add_many(project=project, pairs=memberships, emit=emit)
    subscriptions_subscribe_many(
        project=project, pairs=subscriptions, source=SubscriptionSource.IMPORT, emit=emit
    )
    _progress_recorded(record=record, chunk=chunk)


def _progress_recorded(*, record: Import, chunk: ImportChunk) -> None:
    """Adds the chunk to the import's progress, in the chunk's transaction; the last chunk
    makes the import `committed`."""
    now = clock.now()
    Import.objects.filter(pk=record.pk).update(
        committed_rows=F("committed_rows") + chunk.planned_rows,
        chunks_done=F("chunks_done") + 1,
        updated_at=now,
    )
    Import.objects.filter(
        pk=record.pk,
        chunks_done__gte=F("chunks_total"),
        status__in=[ImportStatus.COMMITTING, ImportStatus.FAILED],
    ).update(status=ImportStatus.COMMITTED, committed_at=now, last_error=None)


class _ApplyChunks(BatchWork[ImportChunk]):
    def run(self, item: ImportChunk) -> None:
        with collector_paused():
            import_chunk_apply(chunk=item)


def _failures_recorded(chunk_ids: list[Any]) -> None:
    """An import whose chunk ran out of attempts is `failed`, with the chunk's error; its
    other chunks go on (staff may requeue the failed one from the console)."""
    failed = ImportChunk.objects.filter(pk__in=chunk_ids, status=WorkStatus.DEAD_LETTERED)
    for chunk in failed:
        Import.objects.filter(pk=chunk.import_record_id, status=ImportStatus.COMMITTING).update(
            status=ImportStatus.FAILED,
            last_error=f"Rows {chunk.first_row} to {chunk.last_row}: {chunk.last_error}",
            updated_at=clock.now(),
        )


def import_chunks_apply_batch() -> int:
    """Claims a chunk (that commits) and applies it in one transaction; returns how many
    chunks it claimed."""
    token, items = IMPORT_QUEUE.claim()
    if not items:
        return 0
    outcome = IMPORT_QUEUE.run(token=token, items=items, work=_ApplyChunks())
    if outcome.dead_lettered:
        _failures_recorded([item.pk for item in items])
    return len(items)


def imports_commit_due(*, budget_seconds: float) -> tuple[int, bool]:
    """Applies due chunks until none are left or the budget is spent."""
    return IMPORT_QUEUE.drain(import_chunks_apply_batch, budget_seconds=budget_seconds)


def import_chunks_requeue(*, ids: list[Any]) -> int:
    """Gives dead-lettered chunks a fresh set of attempts; their imports are `committing`
    again."""
    with transaction.atomic():
        imports = set(
            ImportChunk.objects.filter(pk__in=ids, status=WorkStatus.DEAD_LETTERED).values_list(
                "import_record_id", flat=True
            )
        )
        count = IMPORT_QUEUE.requeue(ids=ids)
        Import.objects.filter(pk__in=imports, status=ImportStatus.FAILED).update(
            status=ImportStatus.COMMITTING, last_error=None, updated_at=clock.now()
        )
    return count
