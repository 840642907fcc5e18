"""Email delivery on the work-queue kit: claim a batch of deliveries (that commits), send
them over one connection of Django's email backend with no transaction open, marking
each email `sent` (with `sent_at`) in one statement as the server takes it, then record
the outcomes in short transactions per batch (sent: the rows done and the
`sendrealm.mail.send` events; transient errors: retry with backoff; permanent ones and
the last attempt: `failed` with `last_error`).

The backend is Django's: `EMAIL_URL` picks SMTP, `EMAIL_BACKEND` an ESP through
django-anymail, and with neither the local capture keeps the messages (README)."""

import functools
import logging
import smtplib
from dataclasses import dataclass
from email.utils import parseaddr
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.core.mail import get_connection
from django.core.mail.backends.smtp import EmailBackend as SmtpBackend
from django.db import connection

from config.db.cursor import binary_cursor
from config.registries.outbox import SystemEvent, system_events_emit
from config.runtime import clock
from config.workqueue.errors import WorkError
from config.workqueue.work import BatchWork
from messaging import conf
from messaging.models.emails import Email, EmailDelivery, EmailStatus
from messaging.queue import EMAIL_QUEUE
from messaging.selectors.campaigns import campaigns_canceled_among
from messaging.services.assembly import build_message, message_bytes
from messaging.services.campaign_progress import campaigns_finish
from messaging.services.delivery_days import email_figures_count
from messaging.services.domains import DkimKey, domain_dkim_key_for
from messaging.services.mime import address
from tenancy.models import Meter
from tenancy.usage import usage_record

logger = logging.getLogger(__name__)


# --- sending -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sent:
    provider_message_id: str | None = None


def smtp_error(error: Exception) -> tuple[WorkError, bool]:
    """The work error for a failed send, and whether the connection is unusable after it.
    5xx replies and refused recipients are permanent; 4xx replies, timeouts and lost
    connections are transient."""
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _ in error.recipients.values()]
        permanent = bool(codes) and all(code >= 500 for code in codes)
        detail = "; ".join(
            f"{address}: {code} {reply.decode(errors='replace')}"
            for address, (code, reply) in error.recipients.items()
        )
        code = f"smtp_{min(codes)}" if codes else "smtp_refused"
        return WorkError(f"Recipients refused: {detail}", code=code, permanent=permanent), False
    if isinstance(error, smtplib.SMTPResponseException):
        reply = error.smtp_error
        text = reply.decode(errors="replace") if isinstance(reply, bytes) else str(reply)
        permanent = error.smtp_code >= 500
        return (
            WorkError(
                f"{error.smtp_code} {text}", code=f"smtp_{error.smtp_code}", permanent=permanent
            ),
            False,
        )
    if isinstance(error, smtplib.SMTPServerDisconnected | OSError):
        return WorkError(f"{type(error).__name__}: {error}", code="smtp_connection"), True
    status = getattr(error, "status_code", None)
    if isinstance(status, int) and 400 <= status < 500 and status != 429:
        return WorkError(
            f"{type(error).__name__}: {error}", code=f"esp_{status}", permanent=True
        ), False
    return WorkError(f"{type(error).__name__}: {error}", code="send_error"), True


class _Sender:
    """Sends a claimed batch over one connection, reconnecting only after it broke."""

    def __init__(self) -> None:
        self.connection = get_connection(fail_silently=False)
        # Django's SMTP backend takes the message's bytes, written without the email
        # package's object tree (`mime_bytes`); other backends take Django messages.
        self.smtp = isinstance(self.connection, SmtpBackend)
        self.opened = False
        # Set when the server could not be reached: the rest of the batch waits for a retry.
        self.unreachable: WorkError | None = None
        self.keys: dict[tuple[Any, str], DkimKey | None] = {}

    def dkim_key(self, email: Email) -> DkimKey | None:
        domain = parseaddr(email.from_email)[1].rpartition("@")[2].lower()
        cache_key = (email.project_id, domain)
        if cache_key not in self.keys:
            self.keys[cache_key] = domain_dkim_key_for(
                project=email.project, from_address=email.from_email
            )
        return self.keys[cache_key]

    def send(self, email: Email) -> Sent | WorkError:
        try:
            if self.smtp:
                raw = message_bytes(email, dkim_key=self.dkim_key(email))
            else:
                message = build_message(
                    email, connection=self.connection, dkim_key=self.dkim_key(email)
                )
        except Exception as error:
            logger.warning("Email %s could not be built", email.id, exc_info=True)
            return WorkError(f"{type(error).__name__}: {error}", code="build_error")
        if not self.opened:
            try:
                self.connection.open()
            except SoftTimeLimitExceeded:
                raise
            except Exception as error:
                self.unreachable, _ = smtp_error(error)
                return self.unreachable
            self.opened = True
        try:
            if self.smtp:
                self._transmit(email, raw)
                return Sent()
            self.connection.send_messages([message])
        except SoftTimeLimitExceeded:
            # The task's time is up: the kit hands the batch's rows back (drain).
            raise
        except Exception as error:
            work_error, broken = smtp_error(error)
            if broken:
                self.close()
            return work_error
        status = getattr(message, "anymail_status", None)
        return Sent(provider_message_id=getattr(status, "message_id", None))

    def _transmit(self, email: Email, raw: bytes) -> None:
        """What Django's SMTP backend does with a message, given its bytes: the same
        envelope (its sanitized addresses), no message when there is no recipient."""
        recipients = [address(value) for value in email.recipients if value]
        if not recipients:
            return
        client = self.connection.connection
        if client is None:
            raise smtplib.SMTPServerDisconnected("The SMTP connection is closed.")
        client.sendmail(address(email.from_email), recipients, raw)

    def close(self) -> None:
        if self.opened:
            try:
                self.connection.close()
            except Exception:
                logger.debug("Closing the mail connection failed", exc_info=True)
        self.opened = False


@functools.cache
def _mark_sent_sql() -> str:
    meta, quote = Email._meta, connection.ops.quote_name
    columns = {field.name: quote(field.column) for field in meta.concrete_fields}
    status, sent_at, last_error = columns["status"], columns["sent_at"], columns["last_error"]
    return (
        # S608: names from the model.
        f"UPDATE {quote(meta.db_table)} SET {status} = %s, {sent_at} = %s, "  # noqa: S608
        f"{columns['provider_message_id']} = %s, {last_error} = NULL "
        # The mark commits without waiting for the WAL flush (`synchronous_commit` off for
        # its own transaction only, so nothing is left on the server connection): a worker
        # that dies still leaves every mark it made (PostgreSQL has it); only a crash of
        # PostgreSQL itself can lose the last fraction of a second of marks, and those
        # emails are then sent again. Waiting for the flush instead would cap each worker
        # at one message per disk sync.
        "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS commit_without_flush "
        # The email's `created_at` too: the update looks in its partition alone.
        f"WHERE {columns['id']} = %s AND {columns['created_at']} = %s AND {status} = %s"
    )


def _mark_sent(email: Email, sent: Sent) -> None:
    """Records the server's acceptance at once, in one autocommitted statement, so a worker
    that dies later in the batch leaves this email to no one to send again.

    The statement is written out and bound by the server (prepared after a few uses): it
    runs once per message, and the ORM's compiling and client-side binding of the same
    conditional update cost several times the statement itself."""
    sent_at = clock.now()
    params = [EmailStatus.SENT.value, sent_at, sent.provider_message_id, email.pk, email.created_at]
    with binary_cursor() as cursor:
        cursor.execute(_mark_sent_sql(), [*params, EmailStatus.QUEUED.value])
        updated = cursor.rowcount
    if updated:
        email.status, email.sent_at = EmailStatus.SENT, sent_at
        # Metered once the server took it, and once only (the update is conditional).
        usage_record(project=email.project, meter=Meter.EMAILS_SENT)


class _Accepted(BatchWork[EmailDelivery]):
    """Deliveries whose email the server accepted (already marked sent): one
    `sendrealm.mail.send` per email, written together in the transaction that marks the
    rows done, so each email is announced exactly once even when a dead worker's batch is
    finished by another."""

    def run(self, item: EmailDelivery) -> None:
        """Nothing per item: the email was marked sent when the server took it."""

    def finish(self, items: list[EmailDelivery]) -> None:
        by_project: dict[Any, list[Email]] = {}
        for item in items:
            by_project.setdefault(item.email.project_id, []).append(item.email)
        # Counted here, with the announcements, for the same reason: once per email.
        now = clock.now()
        email_figures_count(
            (item.email.project_id, item.email.sent_at or now, "sent") for item in items
        )
        for emails in by_project.values():
            system_events_emit(
                project=emails[0].project,
                name="mail.send",
                events=[
                    SystemEvent(
                        payload={
                            "email_id": str(email.pk),
                            "contact_id": str(email.contact_id) if email.contact_id else None,
                            "template_id": str(email.template_id) if email.template_id else None,
                        },
                        contact_id=email.contact_id,
                    )
                    for email in emails
                ],
            )


class _Failures(BatchWork[EmailDelivery]):
    """Records failed attempts, inside the kit's transaction for the rows."""

    def __init__(self, errors: dict[Any, WorkError]) -> None:
        self.errors = errors

    def run(self, item: EmailDelivery) -> None:
        raise self.errors.get(item.pk) or WorkError(
            "The delivery was not attempted.", code="not_attempted"
        )

    def dropped(self, item: EmailDelivery) -> None:
        error = self.errors.get(item.pk)
        if error is not None:
            final = error.permanent or item.attempts >= conf.retry_policy().max_attempts
            message = str(error)
        else:
            final, message = True, "Workers kept stopping while sending this email."
        changes: dict[str, Any] = {"last_error": message}
        if final:
            changes["status"] = EmailStatus.FAILED
        Email.objects.filter(
            pk=item.email_id, created_at=item.email.created_at, status=EmailStatus.QUEUED
        ).update(**changes)


CAMPAIGN_CANCELED = "Not sent: the campaign was canceled before this email left the queue."


class _NotSent(BatchWork[EmailDelivery]):
    """Emails that must not go out (their campaign was canceled): `failed` with the
    reason, their deliveries done."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def run(self, item: EmailDelivery) -> None:
        Email.objects.filter(
            pk=item.email_id, created_at=item.email.created_at, status=EmailStatus.QUEUED
        ).update(status=EmailStatus.FAILED, last_error=self.reason)


def emails_deliver_batch() -> int:
    """Claims a batch (that commits), sends it over one connection with no transaction
    open, and returns how many deliveries it claimed.

    Each accepted message is marked sent right after the server took it (one statement),
    so a worker killed mid-batch leaves only the unsent rest to be sent by the next claim
    (at most the one message in flight can go out twice); an email found already sent is
    not sent again. The rows are then marked done, with the `mail.send` events, in one
    transaction for the batch, and failures are recorded together: if the worker dies
    first, the next claim finishes the sent ones and tries the failed ones again."""
    token, claimed = EMAIL_QUEUE.claim()
    if not claimed:
        return 0
    # One look per batch at the campaigns of its emails: no email of a canceled campaign
    # starts after the cancel is seen.
    campaign_ids = {item.email.campaign_id for item in claimed} - {None}
    canceled = campaigns_canceled_among(campaign_ids=campaign_ids)
    # An email already sent (by a worker that stopped before recording it) is recorded
    # whatever became of its campaign.
    held_back = [
        item
        for item in claimed
        if item.email.campaign_id in canceled and item.email.sent_at is None
    ]
    items = [item for item in claimed if item not in held_back]
    if held_back:
        EMAIL_QUEUE.run(token=token, items=held_back, work=_NotSent(CAMPAIGN_CANCELED))
    max_attempts = conf.retry_policy().max_attempts
    accepted: list[EmailDelivery] = []
    failed: dict[Any, WorkError] = {}
    sender = _Sender()
    try:
        for item in items:
            if item.email.sent_at is not None:
                # A worker that stopped after the server took it: only the record is left.
                accepted.append(item)
                continue
            if item.attempts > max_attempts:
                # Workers kept dying on this one: the kit dead-letters it unsent.
                failed[item.pk] = WorkError("Workers kept stopping.", code="worker_lost")
                continue
            result = sender.unreachable or sender.send(item.email)
            if isinstance(result, WorkError):
                failed[item.pk] = result
            else:
                _mark_sent(item.email, result)
                accepted.append(item)
    finally:
        sender.close()
    if accepted:
        EMAIL_QUEUE.run(token=token, items=accepted, work=_Accepted())
    if failed:
        EMAIL_QUEUE.run(
            token=token,
            items=[item for item in items if item.pk in failed],
            work=_Failures(failed),
        )
    if campaign_ids:
        campaigns_finish(campaign_ids=campaign_ids)
    return len(claimed)


def emails_deliver_due(*, budget_seconds: float) -> tuple[int, bool]:
    """Delivers due emails until none are left or the budget is spent."""
    return EMAIL_QUEUE.drain(emails_deliver_batch, budget_seconds=budget_seconds)
