"""What an ESP reports about a sent email (django-anymail's normalised tracking events):
deliveries, bounces and complaints change the email once, add the address to the
project's suppression list, and record `sendrealm.mail.delivery`, `.mail.bounce` or
`.mail.complaint`; the ESP's refusals fail it; opens, clicks and unsubscribes go to the
engagement services, as our own pixel, redirect and unsubscribe link do.

ESPs resend an event until they get a 200. Status changes are conditional updates keyed on
the timestamp they set, unsubscribes change something at most once, and opens and clicks
(which record an event each time) leave a receipt that a resent event meets."""

import datetime as dt
import hashlib
import json
import logging
from email.utils import parseaddr
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Case, F, Value, When

from config.api.errors import ValidationFailed
from config.registries.outbox import system_event_emit
from config.runtime import clock
from messaging.models import Email, EmailStatus, EspEventReceipt, SuppressionReason
from messaging.services.delivery_days import email_figures_count
from messaging.services.engagement import (
    email_click_record,
    email_open_record,
    email_unsubscribe_record,
)
from messaging.services.suppressions import suppression_add

logger = logging.getLogger(__name__)

# django-anymail's normalised event types (anymail.signals.EventType) this service acts on.
DELIVERED = "delivered"
BOUNCED = "bounced"
COMPLAINED = "complained"
REJECTED = "rejected"
FAILED = "failed"
OPENED = "opened"
CLICKED = "clicked"
UNSUBSCRIBED = "unsubscribed"
# anymail.signals.RejectReason values that mean the address itself is bad: the ESP
# refused it because it bounced before or is not a valid mailbox.
ADDRESS_REJECT_REASONS = frozenset({"bounced", "invalid"})

MAX_ERROR_LENGTH = 2000
# Longer than any ESP keeps resending an event (SendGrid: 72 hours).
RECEIPT_RETENTION = dt.timedelta(days=7)
PURGE_BATCH = 5000
PURGE_MAX_ROWS_PER_RUN = 100_000


class _Change:
    """One kind of ESP report: the timestamp it sets once (the repeat guard), the status it
    moves the email to from the statuses listed, and what it records."""

    def __init__(
        self,
        *,
        stamp: str,
        status: EmailStatus,
        moves_from: tuple[EmailStatus, ...],
        event: str,
        suppression: str | None,
    ) -> None:
        self.stamp = stamp
        # The daily figure it counts into: `delivered_at` counts `delivered`.
        self.figure = stamp.removesuffix("_at")
        self.status = status
        self.moves_from = moves_from
        self.event = event
        self.suppression = suppression


_DELIVERY = _Change(
    stamp="delivered_at",
    status=EmailStatus.DELIVERED,
    moves_from=(EmailStatus.QUEUED, EmailStatus.SENT),
    event="mail.delivery",
    suppression=None,
)
# A bounce may follow a delivery report (the receiving server accepted, then bounced).
_BOUNCE = _Change(
    stamp="bounced_at",
    status=EmailStatus.BOUNCED,
    moves_from=(EmailStatus.QUEUED, EmailStatus.SENT, EmailStatus.DELIVERED),
    event="mail.bounce",
    suppression=SuppressionReason.BOUNCE,
)
# A complaint outranks a bounce: in a message to several recipients one may bounce and
# another complain, and the complaint is what the sender must act on.
_COMPLAINT = _Change(
    stamp="complained_at",
    status=EmailStatus.COMPLAINED,
    moves_from=(EmailStatus.QUEUED, EmailStatus.SENT, EmailStatus.DELIVERED, EmailStatus.BOUNCED),
    event="mail.complaint",
    suppression=SuppressionReason.COMPLAINT,
)
_CHANGES = {DELIVERED: _DELIVERY, BOUNCED: _BOUNCE, COMPLAINED: _COMPLAINT}
_HANDLED = frozenset({*_CHANGES, REJECTED, FAILED, OPENED, CLICKED, UNSUBSCRIBED})


def emails_for_provider_message(*, message_id: str) -> list[Email]:
    """The emails an ESP names: by the id it gave at sending (`provider_message_id`), else
    by our Message-ID header, which ESPs that keep it (and SMTP relays) quote."""
    emails = list(Email.objects.select_related("project").filter(provider_message_id=message_id))
    if emails:
        return emails
    header = f"<{message_id.strip().strip('<>')}>"
    if "@" not in header:
        return []
    return list(Email.objects.select_related("project").filter(message_id=header))


def email_esp_event_record(
    *,
    esp: str,
    event_type: str,
    message_id: str | None,
    recipient: str | None = None,
    at: dt.datetime | None = None,
    reject_reason: str | None = None,
    description: str | None = None,
    click_url: str | None = None,
) -> list[Email]:
    """Applies one ESP tracking event to the emails it names; returns those it changed or
    recorded an open or click of.

    `event_type` is django-anymail's normalised type, `at` the ESP's time of the event.
    Delivered, bounced and complained set their timestamp once and move the status
    forward; a rejection of the address (`rejected` for a bounced or invalid address)
    counts as a bounce, any other rejection and `failed` fail an email that is still
    queued or sent. Opened, clicked and unsubscribed are recorded as our own links record
    them, with `source="esp"`. Other types, and events for messages we do not know,
    change nothing."""
    if not message_id:
        logger.info("%s %s event without a message id ignored", esp, event_type)
        return []
    if event_type == REJECTED and reject_reason in ADDRESS_REJECT_REASONS:
        event_type = BOUNCED
    if event_type not in _HANDLED:
        return []
    reported_at = at
    at = at or clock.now()
    changed: list[Email] = []
    with transaction.atomic():
        emails = emails_for_provider_message(message_id=message_id)
        if not emails:
            logger.info("%s %s event for unknown message %s ignored", esp, event_type, message_id)
            return []
        if len(emails) > 1:
            # Provider ids are unique per ESP account; a repeat means two ESPs (or accounts)
            # gave one id. The event cannot tell them apart, so it applies to each.
            logger.warning("%s message id %s names %d emails", esp, message_id, len(emails))
        if event_type in (OPENED, CLICKED) and reported_at is not None:
            fingerprint = _fingerprint(
                esp, event_type, message_id, recipient, reported_at, click_url
            )
            if not _receipt_first(fingerprint):
                logger.info("%s %s event for %s already recorded", esp, event_type, message_id)
                return []
        for email in emails:
            if _apply(
                email=email,
                esp=esp,
                event_type=event_type,
                recipient=recipient,
                at=at,
                reject_reason=reject_reason,
                description=description,
                click_url=click_url,
            ):
                changed.append(email)
    return changed


def _apply(
    *,
    email: Email,
    esp: str,
    event_type: str,
    recipient: str | None,
    at: dt.datetime,
    reject_reason: str | None,
    description: str | None,
    click_url: str | None,
) -> bool:
    change = _CHANGES.get(event_type)
    if change is not None:
        applied = _email_change(email=email, change=change, at=at)
        if change.suppression is not None:
            _recipient_suppress(email=email, recipient=recipient, reason=change.suppression)
        return applied
    if event_type == OPENED:
        return email_open_record(email_id=email.pk, at=at, source="esp") is not None
    if event_type == CLICKED:
        return (
            email_click_record(email_id=email.pk, url=click_url or "", at=at, source="esp")
            is not None
        )
    if event_type == UNSUBSCRIBED:
        address = _address_of(email=email, recipient=recipient)
        if address is None:
            return False
        done = email_unsubscribe_record(email_id=email.pk, recipient=address, source="esp")
        return done is not None and done.changed
    return _email_fail(email=email, esp=esp, reason=reject_reason, description=description)


def _email_change(*, email: Email, change: _Change, at: dt.datetime) -> bool:
    """Sets the change's timestamp unless it is set (a repeated event), moves the status
    when the email is in one it moves from, and records the system event."""
    updated = Email.objects.filter(
        pk=email.pk, created_at=email.created_at, **{f"{change.stamp}__isnull": True}
    ).update(
        **{change.stamp: at},
        status=Case(
            When(status__in=change.moves_from, then=Value(change.status.value)),
            default=F("status"),
        ),
    )
    if not updated:
        return False
    email_figures_count([(email.project_id, at, change.figure)])
    system_event_emit(
        project=email.project,
        name=change.event,
        payload=_event_payload(email),
        contact_id=email.contact_id,
    )
    return True


def _email_fail(*, email: Email, esp: str, reason: str | None, description: str | None) -> bool:
    """The ESP did not send the message: an email still queued or sent becomes `failed`."""
    detail = f": {description}" if description else ""
    error = f"{esp} did not send the message ({reason or 'failed'}){detail}"
    return bool(
        Email.objects.filter(
            pk=email.pk,
            created_at=email.created_at,
            status__in=(EmailStatus.QUEUED, EmailStatus.SENT),
        ).update(status=EmailStatus.FAILED, last_error=error[:MAX_ERROR_LENGTH])
    )


def _address_of(*, email: Email, recipient: str | None) -> str | None:
    """The address the ESP names, else the email's only recipient."""
    if recipient:
        return recipient
    if len(email.recipients) == 1:
        return parseaddr(email.recipients[0])[1] or None
    logger.info("Email %s: an ESP event without a recipient", email.pk)
    return None


def _recipient_suppress(*, email: Email, recipient: str | None, reason: str) -> None:
    """Adds the address to the project's suppression list; already there, it stays as it
    is."""
    address = _address_of(email=email, recipient=recipient)
    if address is None:
        return
    try:
        suppression_add(project=email.project, email=address, reason=reason)
    except ValidationFailed:
        # Not an address we can store; the ESP must still get its 200.
        logger.info("Email %s: %s for an invalid address; nothing suppressed", email.pk, reason)


def _fingerprint(
    esp: str,
    event_type: str,
    message_id: str,
    recipient: str | None,
    at: dt.datetime,
    click_url: str | None,
) -> str:
    # Not the ESP's event id: some ESPs (Mailgun) give a resent event a new one.
    parts = [esp, event_type, message_id, (recipient or "").lower(), at.isoformat(), click_url]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _receipt_first(fingerprint: str) -> bool:
    """Leaves the receipt of an event; False when it was there (a resent event). A
    concurrent copy waits on the unique index and then finds it."""
    try:
        with transaction.atomic():
            EspEventReceipt.objects.create(fingerprint=fingerprint)
    except IntegrityError:
        return False
    return True


def _event_payload(email: Email) -> dict[str, Any]:
    return {
        "email_id": str(email.pk),
        "contact_id": str(email.contact_id) if email.contact_id else None,
        "template_id": str(email.template_id) if email.template_id else None,
    }


def esp_event_receipts_purge(
    *, batch_size: int = PURGE_BATCH, max_rows: int = PURGE_MAX_ROWS_PER_RUN
) -> int:
    """Deletes receipts past RECEIPT_RETENTION in bounded batches; a run stops after
    `max_rows` and the next one continues."""
    cutoff = clock.now() - RECEIPT_RETENTION
    deleted = 0
    while deleted < max_rows:
        ids = list(
            EspEventReceipt.objects.filter(received_at__lt=cutoff)
            .order_by("received_at")
            .values_list("id", flat=True)[: min(batch_size, max_rows - deleted)]
        )
        if not ids:
            break
        deleted += EspEventReceipt.objects.filter(id__in=ids).delete()[0]
    return deleted
