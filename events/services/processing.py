"""Processing: workers claim due events in micro-batches and process each once.

A claim is a short transaction (`SELECT ... FOR UPDATE SKIP LOCKED`, then mark the rows
`processing` with a claim token and a lease). The batch is then processed in one
transaction that first re-locks the rows and checks the token, with a savepoint per
event, so an event is processed at most once however often a batch is delivered, and a
row whose worker died becomes claimable again when its lease runs out.
"""

import datetime as dt
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Case, F, Q, UUIDField, Value, When

from config import clock
from contacts.models import Contact
from contacts.services import contact_upsert
from events.conf import (
    claim_batch_size,
    lease_seconds,
    retry_policy_for,
    wake_settle_seconds,
)
from events.errors import ContactNotFound, ProcessingError, UnknownContactId, WorkerLost
from events.hooks import event_handlers
from events.models import Event, EventSource, EventStatus
from events.services.catalog import event_types_record
from events.wake import events_wake_later, events_wake_rearm

logger = logging.getLogger(__name__)

MAX_ERROR_LENGTH = 2000
_DUE = (EventStatus.ACCEPTED, EventStatus.FAILED)


@dataclass
class BatchOutcome:
    """What one claimed batch came to."""

    claimed: int = 0
    processed: list[uuid.UUID] = field(default_factory=list)
    failed: int = 0
    dead_lettered: int = 0
    skipped: int = 0
    next_retry_at: dt.datetime | None = None


def events_claim(*, limit: int | None = None) -> tuple[uuid.UUID, list[Event]]:
    """Claims up to `limit` due events (and any whose lease expired) for this worker."""
    limit = limit or claim_batch_size()
    now = clock.now()
    token = uuid.uuid4()
    with transaction.atomic():
        ids = list(
            Event.objects.select_for_update(skip_locked=True)
            .filter(status__in=_DUE, next_attempt_at__lte=now)
            .order_by("next_attempt_at")
            .values_list("id", flat=True)[:limit]
        )
        lost: list[uuid.UUID] = []
        if len(ids) < limit:
            lost = list(
                Event.objects.select_for_update(skip_locked=True)
                .filter(status=EventStatus.PROCESSING, lease_expires_at__lte=now)
                .order_by("lease_expires_at")
                .values_list("id", flat=True)[: limit - len(ids)]
            )
        if lost:
            logger.warning("Reclaiming %d events whose worker stopped", len(lost))
            Event.objects.filter(id__in=lost).update(
                last_error=str(WorkerLost.__doc__), error_code=WorkerLost.code
            )
        claimed = ids + lost
        if not claimed:
            return token, []
        Event.objects.filter(id__in=claimed).update(
            status=EventStatus.PROCESSING,
            attempts=F("attempts") + 1,
            claim_token=token,
            lease_expires_at=now + dt.timedelta(seconds=lease_seconds()),
        )
    events = list(
        Event.objects.filter(id__in=claimed, claim_token=token)
        .select_related("project")
        .order_by("next_attempt_at", "occurred_at", "created_at")
    )
    return token, events


def event_process(*, event: Event, token: uuid.UUID, outcome: BatchOutcome) -> None:
    """Processes one claimed event and records the outcome (a batch of one)."""
    _process_claimed(events=[event], token=token, outcome=outcome)


def _process_claimed(*, events: list[Event], token: uuid.UUID, outcome: BatchOutcome) -> None:
    """Processes claimed events in one transaction: the rows this claim still holds are
    locked together, each event runs in a savepoint of its own (so one failure costs only
    its own writes), and the outcomes are written in bulk. A batch costs one commit, not
    one per event; a worker that dies mid-batch commits nothing and the lease hands the
    whole batch on."""
    processed: list[Event] = []
    with transaction.atomic():
        held = set(
            Event.objects.select_for_update()
            .filter(
                id__in=[event.id for event in events],
                status=EventStatus.PROCESSING,
                claim_token=token,
            )
            .values_list("id", flat=True)
        )
        # Rows not held were taken over by another worker (our lease ran out).
        outcome.skipped += sum(1 for event in events if event.id not in held)
        mine = [event for event in events if event.id in held]
        contacts = ContactIndex.load(mine)
        handlers = event_handlers()
        for event in mine:
            try:
                with transaction.atomic():
                    if event.attempts > retry_policy_for(event.project).max_attempts:
                        raise WorkerLost("Workers kept stopping while processing this event.")
                    contact = _resolve_contact(event, contacts)
                    event.contact = contact
                    for handler in handlers:
                        handler(event=event, contact=contact)
            except Exception as error:
                contacts.forget_pending()
                _record_failure(event=event, token=token, error=error, outcome=outcome)
                continue
            contacts.keep_pending()
            processed.append(event)
        if processed:
            Event.objects.filter(id__in=[event.id for event in processed]).update(
                status=EventStatus.PROCESSED,
                contact_id=Case(
                    *[When(id=event.id, then=Value(event.contact_id)) for event in processed],
                    output_field=UUIDField(),
                ),
                processed_at=clock.now(),
                claim_token=None,
                lease_expires_at=None,
                next_attempt_at=None,
                last_error="",
                error_code="",
            )
    outcome.processed.extend(event.id for event in processed)


def _record_failure(
    *, event: Event, token: uuid.UUID, error: Exception, outcome: BatchOutcome
) -> None:
    policy = retry_policy_for(event.project)
    if isinstance(error, ProcessingError):
        code, permanent = error.code, error.permanent
    else:
        code, permanent = f"exception:{type(error).__name__}"[:64], False
        logger.warning("Event %s failed on attempt %d", event.id, event.attempts, exc_info=error)
    message = f"{type(error).__name__}: {error}"[:MAX_ERROR_LENGTH]
    now = clock.now()
    if permanent or event.attempts >= policy.max_attempts:
        status, next_attempt_at = EventStatus.DEAD_LETTERED, None
        outcome.dead_lettered += 1
    else:
        status, next_attempt_at = EventStatus.FAILED, now + policy.delay(event.attempts)
        outcome.failed += 1
        if outcome.next_retry_at is None or next_attempt_at < outcome.next_retry_at:
            outcome.next_retry_at = next_attempt_at
    Event.objects.filter(id=event.id, status=EventStatus.PROCESSING, claim_token=token).update(
        status=status,
        next_attempt_at=next_attempt_at,
        claim_token=None,
        lease_expires_at=None,
        last_error=message,
        error_code=code,
    )


class ContactIndex:
    """The active contacts a batch refers to, loaded in one query. Contacts an event
    creates or changes join the index only once that event's savepoint has held."""

    def __init__(self, contacts: list[Contact]) -> None:
        self._by: dict[tuple[str, Any, Any], Contact] = {}
        self._pending: list[Contact] = []
        for contact in contacts:
            self._add(contact)

    @classmethod
    def load(cls, events: list[Event]) -> "ContactIndex":
        if not events:
            return cls([])
        # One IN list per identity kind and project, not one OR branch per event: a batch
        # of 100 events plans three index scans instead of three hundred.
        wanted: dict[Any, tuple[set[Any], set[str], set[str]]] = {}
        for event in events:
            ids, external_ids, emails = wanted.setdefault(event.project_id, (set(), set(), set()))
            ids.update(ref for ref in (event.contact_ref, event.contact_id) if ref is not None)
            if event.external_id:
                external_ids.add(event.external_id)
            if event.email:
                emails.add(event.email)
        match = Q(pk__in=[])
        for project_id, (ids, external_ids, emails) in wanted.items():
            match |= Q(project_id=project_id) & (
                Q(id__in=ids) | Q(external_id__in=external_ids) | Q(email__in=emails)
            )
        return cls(list(Contact.objects.filter(match, deleted_at__isnull=True)))

    def _add(self, contact: Contact) -> None:
        self._by[("id", contact.project_id, contact.id)] = contact
        if contact.external_id:
            self._by[("external_id", contact.project_id, contact.external_id)] = contact
        if contact.email:
            self._by[("email", contact.project_id, contact.email)] = contact

    def get(self, kind: str, project_id: Any, value: Any) -> Contact | None:
        return self._by.get((kind, project_id, value))

    def remember(self, contact: Contact) -> None:
        self._pending.append(contact)

    def keep_pending(self) -> None:
        for contact in self._pending:
            self._add(contact)
        self._pending.clear()

    def forget_pending(self) -> None:
        self._pending.clear()


def _resolve_contact(event: Event, contacts: ContactIndex) -> Contact | None:
    """Identity in the CONTRACT's order: contact_id, then external_id, then normalised email
    (an unknown email creates the contact, which emits `sendrealm.contact.created`)."""
    project_id = event.project_id
    if event.source == EventSource.SYSTEM:
        if event.contact_id is None:
            return None
        return contacts.get("id", project_id, event.contact_id)
    if event.contact_ref is not None:
        contact = contacts.get("id", project_id, event.contact_ref)
        if contact is not None:
            return contact
        if not (event.external_id or event.email):
            raise UnknownContactId(f"No active contact has id {event.contact_ref}.")
    if event.external_id:
        contact = contacts.get("external_id", project_id, event.external_id)
        if contact is not None:
            return contact
        if not event.email:
            raise ContactNotFound(
                f"No active contact has external_id {event.external_id!r} (yet); "
                "create it with POST /contacts/upsert or send an email with the event."
            )
    if event.email:
        contact = contacts.get("email", project_id, event.email)
        if contact is not None and (contact.external_id or not event.external_id):
            return contact
        # New email, or a known one without an external id to attach.
        contact, _ = contact_upsert(
            project=event.project, email=event.email, external_id=event.external_id
        )
        contacts.remember(contact)
        return contact
    raise UnknownContactId("The event carries no identity.")


def events_process_batch(*, limit: int | None = None) -> BatchOutcome:
    """Claims one micro-batch, processes it, and counts it into the catalog."""
    token, events = events_claim(limit=limit)
    outcome = BatchOutcome(claimed=len(events))
    if events:
        _process_claimed(events=events, token=token, outcome=outcome)
    if outcome.processed:
        event_types_record(event_ids=outcome.processed)
    if outcome.next_retry_at is not None:
        delay = (outcome.next_retry_at - clock.now()).total_seconds()
        events_wake_later(countdown=delay)
    return outcome


def events_process_due(*, budget_seconds: float, limit: int | None = None) -> tuple[int, bool]:
    """Processes batches while there is due work, for at most `budget_seconds`.

    Returns the number of events claimed and whether work was left when the budget ran
    out (the caller then hands the rest to a fresh task).
    """
    deadline = time.monotonic() + budget_seconds
    total = 0
    while True:
        claimed = events_process_batch(limit=limit).claimed
        total += claimed
        if claimed == 0:
            # Re-arm the wake signal, then look once more: an event committed before the
            # re-arm is found now, one committed after it publishes a new wake-up (once
            # the web process's own short debounce has passed: the settle covers that).
            events_wake_rearm()
            claimed = events_process_batch(limit=limit).claimed
            total += claimed
            if claimed == 0:
                settle = wake_settle_seconds()
                if settle <= 0:
                    return total, False
                time.sleep(settle)
                claimed = events_process_batch(limit=limit).claimed
                total += claimed
                if claimed == 0:
                    return total, False
        if time.monotonic() >= deadline:
            return total, True
