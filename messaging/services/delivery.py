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
import re
import smtplib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import parseaddr
from typing import Any

import css_inline
import dkim
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.mail.backends.smtp import EmailBackend as SmtpBackend
from django.core.mail.message import SafeMIMEMultipart, SafeMIMEText
from django.db import connection

from config import clock
from config.db import binary_cursor
from config.outbox import SystemEvent, system_events_emit
from config.workqueue.errors import WorkError
from config.workqueue.queue import BatchWork
from messaging.models.emails import Email, EmailDelivery, EmailStatus
from messaging.queue import EMAIL_QUEUE, email_retry_policy
from messaging.selectors.campaigns import campaigns_canceled_among
from messaging.services.campaign_progress import campaigns_finish
from messaging.services.domains import DkimKey, domain_dkim_key_for
from messaging.services.htmltools import LenientHTMLParser
from messaging.services.mime import Outgoing, address, mime_bytes
from messaging.services.tokens import unsubscribe_token
from messaging.services.tracking import Tracking, html_tracked
from tenancy.models import Meter
from tenancy.usage import usage_record

logger = logging.getLogger(__name__)

# --- building the message ------------------------------------------------------------------


class _TextOf(LenientHTMLParser):
    """The readable text of an HTML part: blocks on their own lines, links with their
    address after the words, scripts and styles left out."""

    BLOCKS = frozenset({"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head", "title"):
            self.skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")
        elif tag == "a":
            self.href = dict(attrs).get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head", "title"):
            self.skip = max(self.skip - 1, 0)
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")
        elif tag == "a" and self.href:
            self.parts.append(f" ({self.href})")
            self.href = None

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    """A plain-text part for an email given only as HTML."""
    parser = _TextOf()
    parser.feed(html)
    parser.close()
    lines = [line.strip() for line in "".join(parser.parts).splitlines()]
    text: list[str] = []
    for line in lines:
        if line or (text and text[-1]):
            text.append(line)
    return "\n".join(text).strip() + "\n"


_inliner = css_inline.CSSInliner(load_remote_stylesheets=False)


def inline_css(html: str) -> str:
    """`<style>` rules moved into `style` attributes (mail clients drop style blocks)."""
    try:
        return _inliner.inline(html)
    except Exception:
        logger.warning("CSS inlining failed; sending the HTML as written", exc_info=True)
        return html


HEADERS_TO_SIGN = (
    b"from",
    b"to",
    b"reply-to",
    b"subject",
    b"date",
    b"message-id",
    b"mime-version",
    b"content-type",
    b"list-unsubscribe",
    b"list-unsubscribe-post",
)


def dkim_signature(raw: bytes, key: DkimKey) -> bytes:
    """The `DKIM-Signature` header line (folded, CRLF-ended) for a message's bytes."""
    return bytes(
        dkim.sign(
            raw,
            key.selector.encode(),
            key.domain.encode(),
            key.private_key_pem.encode(),
            include_headers=list(HEADERS_TO_SIGN),
            canonicalize=(b"relaxed", b"relaxed"),
        )
    )


class SignedEmail(EmailMultiAlternatives):
    """A message that adds its DKIM signature when it is turned into MIME."""

    dkim_key: DkimKey | None = None

    def message(self, *, policy: Any = None) -> SafeMIMEText | SafeMIMEMultipart:
        message: SafeMIMEText | SafeMIMEMultipart = super().message()
        if self.dkim_key is None:
            return message
        signature = dkim_signature(message.as_bytes(linesep="\r\n"), self.dkim_key)
        name, _, value = signature.decode().partition(":")
        # Unfolded: relaxed canonicalisation ignores how the header is wrapped.
        message[name] = " ".join(value.split())
        return message


def outgoing_of(email: Email) -> Outgoing:
    """What an email's message says: its headers (Message-ID, X-Email-Id, one-click
    List-Unsubscribe) and parts: HTML with CSS inlined, its links tracked and the open
    pixel added (as the project's policies say), and a text part made when there is none.

    The text part keeps the original links: plain-text readers see the address itself,
    and an opaque redirect there reads like phishing."""
    html = inline_css(email.html) if email.html else None
    text = email.text if email.text else (html_to_text(html) if html else "")
    if html:
        project = email.project
        html = html_tracked(
            html,
            Tracking(email_id=email.id, opens=project.track_opens, clicks=project.track_clicks),
        )
    recipient = parseaddr(email.recipients[0])[1] if email.recipients else ""
    unsubscribe = f"{settings.PUBLIC_BASE_URL}/u/{unsubscribe_token(email.id, recipient)}"
    return Outgoing(
        subject=email.subject,
        from_email=email.from_email,
        to=list(email.recipients),
        reply_to=[email.reply_to] if email.reply_to else [],
        text=text,
        html=html,
        headers={
            "Message-ID": email.message_id,
            "X-Email-Id": str(email.id),
            "List-Unsubscribe": f"<{unsubscribe}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
    )


def build_message(
    email: Email, *, connection: Any = None, dkim_key: DkimKey | None = None
) -> SignedEmail:
    """The email as a Django message, for backends that take one (ESPs, the capture)."""
    outgoing = outgoing_of(email)
    message = SignedEmail(
        subject=outgoing.subject,
        body=outgoing.text,
        from_email=outgoing.from_email,
        to=list(outgoing.to),
        reply_to=list(outgoing.reply_to) or None,
        connection=connection,
        headers=dict(outgoing.headers),
    )
    if outgoing.html is not None:
        message.attach_alternative(outgoing.html, "text/html")
    message.dkim_key = dkim_key
    return message


def message_bytes(email: Email, *, dkim_key: DkimKey | None = None) -> bytes:
    """The email as the bytes an SMTP server receives, DKIM-signed when a key is given."""
    raw = mime_bytes(outgoing_of(email))
    if dkim_key is None:
        return raw
    # dkimpy's header, folded, goes first, as signers conventionally put it.
    return dkim_signature(raw, dkim_key) + raw


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


@contextmanager
def _unflushed_commits() -> Iterator[None]:
    """Lets the per-message `sent` marks commit without waiting for the WAL flush.

    A worker that dies still leaves every mark it made (PostgreSQL has it); only a crash
    of PostgreSQL itself can lose the last fraction of a second of marks, and those
    emails are then sent again. Waiting for the flush instead would cap each worker at
    one message per disk sync."""
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO off")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")


@functools.cache
def _mark_sent_sql() -> str:
    meta, quote = Email._meta, connection.ops.quote_name
    columns = {field.name: quote(field.column) for field in meta.concrete_fields}
    status, sent_at, last_error = columns["status"], columns["sent_at"], columns["last_error"]
    return (
        # S608: names from the model.
        f"UPDATE {quote(meta.db_table)} SET {status} = %s, {sent_at} = %s, "  # noqa: S608
        f"{columns['provider_message_id']} = %s, {last_error} = NULL "
        f"WHERE {columns['id']} = %s AND {status} = %s"
    )


def _mark_sent(email: Email, sent: Sent) -> None:
    """Records the server's acceptance at once, in one autocommitted statement, so a worker
    that dies later in the batch leaves this email to no one to send again.

    The statement is written out and bound by the server (prepared after a few uses): it
    runs once per message, and the ORM's compiling and client-side binding of the same
    conditional update cost several times the statement itself."""
    sent_at = clock.now()
    params = [EmailStatus.SENT.value, sent_at, sent.provider_message_id, email.pk]
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
            final = error.permanent or item.attempts >= email_retry_policy().max_attempts
            message = str(error)
        else:
            final, message = True, "Workers kept stopping while sending this email."
        changes: dict[str, Any] = {"last_error": message}
        if final:
            changes["status"] = EmailStatus.FAILED
        Email.objects.filter(pk=item.email_id, status=EmailStatus.QUEUED).update(**changes)


CAMPAIGN_CANCELED = "Not sent: the campaign was canceled before this email left the queue."


class _NotSent(BatchWork[EmailDelivery]):
    """Emails that must not go out (their campaign was canceled): `failed` with the
    reason, their deliveries done."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def run(self, item: EmailDelivery) -> None:
        Email.objects.filter(pk=item.email_id, status=EmailStatus.QUEUED).update(
            status=EmailStatus.FAILED, last_error=self.reason
        )


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
    max_attempts = email_retry_policy().max_attempts
    accepted: list[EmailDelivery] = []
    failed: dict[Any, WorkError] = {}
    sender = _Sender()
    try:
        with _unflushed_commits():
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
