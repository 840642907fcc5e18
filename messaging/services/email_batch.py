"""Emails made together, as a worker advancing many runs makes them, or a list of sends:
each checked, rendered and addressed as a single send is (emails.py), all stored in one
insert (email_store.py)."""

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import transaction

from config.api.errors import ValidationFailed
from config.db.ids import uuid7
from config.runtime import clock
from contacts.selectors import contact_list
from messaging.models.emails import Email, EmailStatus
from messaging.selectors.suppressions import suppressed_among
from messaging.services.email_store import emails_insert_instances
from messaging.services.emails import (
    _LOOK_UP,
    NEW_EMAIL,
    EmailRequest,
    Templates,
    _addressed,
    _rendered,
    bare_address,
)
from messaging.services.rendering_batch import EmailVersionRenderer
from tenancy.models import Meter, Project
from tenancy.usage import Reservation, usage_reserve

# The addresses a batch expects to send to, by project (`EmailBatch.expect`).
Likely = Iterable[tuple[Project, Iterable[str]]]


class EmailBatch:
    """Emails made together, as a worker advancing many runs makes them: each is checked,
    rendered, addressed and counted against the monthly email quota when it is added, as
    `email_send` does (raising its errors, PlanLimitExceeded included, so the caller can
    tell which one failed), and all are stored by `store`: one insert of the emails and
    one of their delivery jobs, whatever their number. Each template is read once per
    batch, and the suppression list once for the addresses `expect` names (an address
    it did not name costs a query when added). No idempotency keys: callers deduplicate
    by their own unique keys, in the same transaction."""

    def __init__(self, *, likely: Callable[[], Likely] | None = None) -> None:
        # Called at the first `add` (and passed to `expect`): the addresses the caller
        # expects to send to, which a batch that sends nothing never reads.
        self._likely = likely
        self._templates: Templates = {}
        self._renderers: dict[Any, EmailVersionRenderer] = {}
        self._suppressed: dict[tuple[Any, str], bool] = {}
        self._pending: list[Email] = []
        self._reservations: list[Reservation] = []

    def __len__(self) -> int:
        return len(self._pending)

    def expect(self, *, project: Project, addresses: Iterable[str]) -> None:
        """Reads the suppression list for addresses the batch is likely to send to, in
        one query."""
        wanted = {bare_address(address) for address in addresses}
        wanted = {address for address in wanted if (project.pk, address) not in self._suppressed}
        if not wanted:
            return
        found = suppressed_among(project=project, emails=wanted)
        for address in wanted:
            self._suppressed[(project.pk, address)] = address in found

    def add(self, *, project: Project, request: EmailRequest, contact: Any = _LOOK_UP) -> Email:
        """The email of `request`, not yet stored (its id is final). `contact`: the
        request's contact, when the caller has it loaded; else it is read by
        `request.contact_id`."""
        if self._likely is not None:
            likely, self._likely = self._likely, None
            for each_project, addresses in likely():
                self.expect(project=each_project, addresses=addresses)
        fields = _rendered(
            project=project,
            request=request,
            contact=contact,
            templates=self._templates,
            renderers=self._renderers,
        )
        to = fields["to"]
        self.expect(project=project, addresses=to)
        suppressed = {
            address
            for address in (bare_address(each) for each in to)
            if self._suppressed[(project.pk, address)]
        }
        # The id carries the instant of `created_at`: reads by id find its partition.
        now = clock.now()
        email = NEW_EMAIL.make(
            **fields,
            **_addressed(to, suppressed),
            request_fingerprint="",
            id=uuid7(at=now),
            created_at=now,
        )
        # Counted once accepted; one to suppressed addresses only is not sent at all.
        queued = email.status == EmailStatus.QUEUED
        self._reservations.append(
            usage_reserve(project=project, meter=Meter.EMAILS_SENT, count=int(queued))
        )
        self._pending.append(email)
        return email

    def release(self) -> None:
        """Forgets what was added and not stored, giving its quota back."""
        for reservation in self._reservations:
            reservation.release()
        self._reservations, self._pending = [], []

    def store(self) -> list[Email]:
        """Stores what was added, in the caller's transaction, and wakes delivery after it
        commits; returns the emails."""
        emails, self._pending = self._pending, []
        reservations, self._reservations = self._reservations, []
        if not emails:
            return []
        now = clock.now()
        queued = [email for email in emails if email.status == EmailStatus.QUEUED]
        try:
            emails_insert_instances(emails, queued=queued, now=now)
        except Exception:
            for reservation in reservations:
                reservation.release()
            raise
        for reservation in reservations:
            reservation.settle()
        return emails


def email_send_many(*, project: Project, requests: Sequence[EmailRequest]) -> list[Email]:
    """Stores one email per request and queues their delivery, in bulk (`EmailBatch`; the
    requests' contacts and the suppression list read in one query each); the first
    invalid request raises and nothing is stored."""
    wanted = {request.contact_id for request in requests if request.contact_id is not None}
    contacts = contact_list(project=project).in_bulk(wanted) if wanted else {}
    batch = EmailBatch()
    batch.expect(
        project=project,
        addresses=[
            *(address for request in requests for address in request.to),
            *(contact.email for contact in contacts.values() if contact.email),
        ],
    )
    try:
        for request in requests:
            if request.contact_id is None:
                batch.add(project=project, request=request, contact=None)
                continue
            contact = contacts.get(request.contact_id)
            if contact is None:
                raise ValidationFailed.at("contact_id", "No such contact.", code="not_found")
            batch.add(project=project, request=request, contact=contact)
    except Exception:
        batch.release()
        raise
    with transaction.atomic():
        return batch.store()
