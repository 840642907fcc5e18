"""Processing: workers claim due events in micro-batches and process each once.

The events table is a work queue of the kit (config/workqueue/, events/queue.py): a
claim is a short transaction that marks rows `processing` with a token and a lease; the
batch is then processed in one transaction that re-locks the rows and checks the token
(one savepoint for the batch, one per event only when an event fails), so an event is
processed at most once however often a batch is delivered, and a row whose worker died
becomes claimable again when its lease runs out. The batch is counted into the catalog
in the same transaction. This module is what processing an event means: identity
resolution, the handlers and the count.
"""

import logging
import uuid
from typing import Any

from django.db import transaction

from config.runtime import clock
from config.workqueue.work import BatchOutcome, BatchWork, PerItem
from contacts.models import Contact
from contacts.selectors import contact_list_by_identities
from contacts.services import contact_upsert, contacts_create_missing
from events.errors import ContactNotFound, UnknownContactId
from events.hooks import EventBatchHandler, event_batch_handlers, event_handlers
from events.models import Event, EventSource
from events.queue import EVENT_QUEUE
from events.services.catalog import event_types_count

logger = logging.getLogger(__name__)

__all__ = [
    "BatchOutcome",
    "event_process",
    "events_claim",
    "events_process_batch",
    "events_process_due",
]


def events_claim(*, limit: int | None = None) -> tuple[uuid.UUID, list[Event]]:
    """Claims up to `limit` due events (and any whose lease expired) for this worker."""
    return EVENT_QUEUE.claim(limit=limit)


def event_process(*, event: Event, token: uuid.UUID, outcome: BatchOutcome) -> None:
    """Processes one claimed event and records the outcome (a batch of one). It is left
    to the sweep to count into the catalog."""
    EVENT_QUEUE.run(token=token, items=[event], work=_EventWork(count=False), outcome=outcome)


class _EventWork(BatchWork[Event]):
    """Resolve the contact, run the handlers; processed events keep their contact and,
    with `count`, are counted into the catalog in the same transaction. Batch handlers
    (events/hooks.py) see the batch together when it runs in one savepoint, and each
    event alone when it is redone event by event."""

    def __init__(self, *, count: bool = True) -> None:
        self.count = count
        self.counted = False

    def begin(self, items: list[Event]) -> None:
        self.contacts = ContactIndex.load(items)
        self.handlers = event_handlers()
        self.batch_handlers = event_batch_handlers()
        self.opened: list[EventBatchHandler] | None = None

    def begin_together(self, items: list[Event]) -> None:
        self.contacts.create_missing(items)
        self.opened = [factory() for factory in self.batch_handlers]
        for opened in self.opened:
            opened.begin(events=items)

    def run(self, item: Event) -> None:
        contact = _resolve_contact(item, self.contacts)
        item.contact = contact
        for handler in self.handlers:
            handler(event=item, contact=contact)
        if self.opened is not None:
            for opened in self.opened:
                opened.handle(event=item, contact=contact)
            return
        for factory in self.batch_handlers:
            alone = factory()
            alone.begin(events=[item])
            alone.handle(event=item, contact=contact)
            alone.flush()

    def finish_together(self, items: list[Event]) -> None:
        for opened in self.opened or []:
            opened.flush()

    def kept(self, item: Event) -> None:
        self.contacts.keep_pending()

    def dropped(self, item: Event) -> None:
        self.contacts.forget_pending()

    def finish(self, items: list[Event]) -> None:
        if not self.count:
            return
        # Counting must not cost the batch its processing: what fails here is rolled
        # back alone and left to the sweep.
        try:
            with transaction.atomic():
                event_types_count(events=items)
        except Exception:
            logger.warning("Counting a batch into the catalog failed", exc_info=True)
            return
        self.counted = True

    def done_values(self, items: list[Event]) -> dict[str, Any]:
        now = clock.now()
        values: dict[str, Any] = {
            "processed_at": now,
            "contact_id": PerItem({event.id: event.contact_id for event in items}),
        }
        if self.counted:
            values["cataloged_at"] = now
        return values


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
        wanted: dict[Any, tuple[set[Any], set[str], set[str]]] = {}
        for event in events:
            ids, external_ids, emails = wanted.setdefault(event.project_id, (set(), set(), set()))
            ids.update(ref for ref in (event.contact_ref, event.contact_id) if ref is not None)
            if event.external_id:
                external_ids.add(event.external_id)
            if event.email:
                emails.add(event.email)
        return cls(list(contact_list_by_identities(wanted=wanted)))

    def create_missing(self, events: list[Event]) -> None:
        """Creates in bulk the contacts that events of the batch would each create one by
        one (an email no active contact has), and indexes them. Run inside the batch's
        transaction: when the batch is redone item by item they are made again."""
        wanted: dict[Any, tuple[Any, list[tuple[str, str | None]]]] = {}
        for event in events:
            identity = _new_identity(event, self)
            if identity is not None:
                wanted.setdefault(event.project_id, (event.project, []))[1].append(identity)
        for project, identities in wanted.values():
            for contact in contacts_create_missing(project=project, identities=identities):
                self._add(contact)

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


def _new_identity(event: Event, contacts: ContactIndex) -> tuple[str, str | None] | None:
    """The `(email, external_id)` of the contact `_resolve_contact` would create for the
    event, or None when it would find one (or fail)."""
    project_id = event.project_id
    if event.source == EventSource.SYSTEM or not event.email:
        return None
    if event.contact_ref is not None and contacts.get("id", project_id, event.contact_ref):
        return None
    if event.external_id and contacts.get("external_id", project_id, event.external_id):
        return None
    if contacts.get("email", project_id, event.email) is not None:
        return None
    return event.email, event.external_id


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
    # No identity at all: an anonymous event (Segment's, tracking/), processed without a
    # contact; the native API never stores one.
    return None


def events_process_batch(*, limit: int | None = None) -> BatchOutcome:
    """Claims one micro-batch, processes it, and counts it into the catalog."""
    token, events = events_claim(limit=limit)
    outcome = BatchOutcome(claimed=len(events))
    if events:
        EVENT_QUEUE.run(token=token, items=events, work=_EventWork(), outcome=outcome)
    return outcome


def events_process_due(*, budget_seconds: float, limit: int | None = None) -> tuple[int, bool]:
    """Processes batches while there is due work, for at most `budget_seconds`.

    Returns the number of events claimed and whether work was left when the budget ran
    out (the caller then hands the rest to a fresh task).
    """
    return EVENT_QUEUE.drain(
        lambda: events_process_batch(limit=limit).claimed, budget_seconds=budget_seconds
    )
