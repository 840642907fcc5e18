"""Creating emails: validation, rendering, suppression and idempotency. Delivery (the
SMTP side) lives in messaging/services/delivery.py; the message it sends is assembled in
messaging/services/assembly.py."""

import datetime as dt
import functools
import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import make_msgid, parseaddr
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from config.api.errors import Conflict, IdempotencyConflict, Issue, ValidationFailed, or_404
from config.db.fresh import Fresh
from config.db.ids import uuid7
from config.runtime import clock
from contacts.models import Contact
from contacts.selectors import contact_get
from messaging.hooks import push_test_sender
from messaging.models.emails import Email, EmailDelivery, EmailKey, EmailStatus
from messaging.models.templates import Channel, MessageTemplate, TemplateVersion
from messaging.queue import EMAIL_QUEUE
from messaging.selectors.suppressions import suppressed_among
from messaging.selectors.templates import (
    template_get,
    template_version_current,
)
from messaging.services.rendering import EventLike, render_email, template_context
from messaging.services.rendering_batch import EmailVersionRenderer
from messaging.services.templates import template_published_to_send
from tenancy.models import Meter, Project
from tenancy.usage import usage_reserve

IDEMPOTENCY_WINDOW = dt.timedelta(hours=24)
MAX_RECIPIENTS = 50
# A batch makes an email per send: `Email(...)` with its related instances asked the
# database routers about each relation, a sixth of an automation's send.
NEW_EMAIL = Fresh(Email)


@dataclass(frozen=True)
class EmailRequest:
    """A send as the API (or another sender) asks for it; shapes already checked."""

    to: list[str]
    from_email: str | None = None
    subject: str | None = None
    html: str | None = None
    text: str | None = None
    template_id: uuid.UUID | None = None
    data: Mapping[str, Any] | None = None
    contact_id: uuid.UUID | None = None
    tags: Sequence[str] = ()
    reply_to: str | None = None
    # Variables for the template besides `data` and `contact`: the event a sender acts on
    # and any of its own (automations add `steps`). Not part of the fingerprint: senders
    # that pass them do not use idempotency keys.
    event: EventLike | None = None
    variables: Mapping[str, Any] | None = None

    def fingerprint(self) -> str:
        """A hash of the request, so a repeated idempotency key with another body is
        told apart from a retry."""
        body = {
            "to": self.to,
            "from": self.from_email,
            "subject": self.subject,
            "html": self.html,
            "text": self.text,
            "template_id": str(self.template_id) if self.template_id else None,
            "data": self.data,
            "contact_id": str(self.contact_id) if self.contact_id else None,
            "tags": list(self.tags),
            "reply_to": self.reply_to,
        }
        encoded = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(encoded.encode()).hexdigest()


@functools.lru_cache(maxsize=4096)
def address_problem(value: str) -> str | None:
    """Why `value` is not `a@b.c` or `Name <a@b.c>`, or None. Remembered per process: a
    batch of sends checks the same sender and recipients over and over."""
    address = parseaddr(value)[1]
    if not address or "\n" in value or "\r" in value:
        return "Must be an address, optionally with a name: `Name <a@b.c>`."
    try:
        validate_email(address)
    except DjangoValidationError:
        return "Must be an address, optionally with a name: `Name <a@b.c>`."
    return None


@functools.lru_cache(maxsize=4096)
def bare_address(value: str) -> str:
    return parseaddr(value)[1]


def _checked_address(value: str | None, path: str) -> str | None:
    if value is None:
        return None
    problem = address_problem(value)
    if problem:
        raise ValidationFailed.at(path, problem, code="invalid_email")
    return value


def _contact(project: Project, contact_id: uuid.UUID | None) -> Contact | None:
    if contact_id is None:
        return None
    contact = contact_get(project=project, contact_id=contact_id)
    if contact is None:
        raise ValidationFailed.at("contact_id", "No such contact.", code="not_found")
    return contact


def _recipients(to: list[str], contact: Contact | None) -> list[str]:
    if not to:
        if contact is None or not contact.email:
            raise ValidationFailed.at(
                "to", "Give `to`, or a `contact_id` of a contact with an email.", code="required"
            )
        to = [contact.email]
    if len(to) > MAX_RECIPIENTS:
        raise ValidationFailed.at(
            "to", f"At most {MAX_RECIPIENTS} recipients.", code="too_many_recipients"
        )
    issues = [
        Issue(code="invalid_email", path=f"to.{index}", message=problem)
        for index, address in enumerate(to)
        if (problem := address_problem(address))
    ]
    if issues:
        raise ValidationFailed(issues=issues)
    return to


def _sender(project: Project, given: str | None, template: MessageTemplate | None) -> str:
    sender = given or (template.from_email if template else None) or project.default_from
    if not sender:
        raise ValidationFailed.at(
            "from",
            "Give `from`: neither the template nor the project policy `default_from` has one.",
            code="required",
        )
    return sender


def message_id_for(sender: str) -> str:
    """A fresh Message-ID on the sender's domain (`<...@example.com>`)."""
    domain = bare_address(sender).rpartition("@")[2] or "sendrealm.local"
    return make_msgid(domain=domain)


@dataclass(frozen=True)
class Prepared:
    """An email ready to store: rendered, addressed, its recipients filtered."""

    fields: dict[str, Any]


# A template and its published version, by (project, template): what a batch of sends
# reads once however many of its emails use it.
Templates = dict[tuple[Any, uuid.UUID], tuple[MessageTemplate, TemplateVersion]]
_LOOK_UP = object()


def _rendered(
    *,
    project: Project,
    request: EmailRequest,
    version: TemplateVersion | None = None,
    contact: Any = _LOOK_UP,
    templates: Templates | None = None,
    renderers: dict[Any, EmailVersionRenderer] | None = None,
) -> dict[str, Any]:
    """The email's fields but its recipients and status (the suppression list settles
    those). `contact` is the request's contact when the caller has it loaded; `templates`
    and `renderers` are what a batch keeps of each template it sends (by version)."""
    if contact is _LOOK_UP:
        contact = _contact(project, request.contact_id)
    to = _recipients(list(request.to), contact)
    _checked_address(request.from_email, "from")
    _checked_address(request.reply_to, "reply_to")
    template: MessageTemplate | None = None
    if version is not None:
        template = version.template
    elif request.template_id is not None:
        if templates is None:
            template, version = template_published_to_send(
                project=project, template_id=request.template_id, channel=Channel.EMAIL
            )
        else:
            found = templates.get((project.pk, request.template_id))
            if found is None:
                found = template_published_to_send(
                    project=project, template_id=request.template_id, channel=Channel.EMAIL
                )
                templates[(project.pk, request.template_id)] = found
            template, version = found
    if version is not None:
        variables = template_context(
            project=project,
            contact=contact,
            event=request.event,
            data=request.data,
            extra=request.variables,
        )
        if renderers is None:
            rendered = render_email(version, variables)
        else:
            renderer = renderers.get(version.pk)
            if renderer is None:
                renderer = renderers[version.pk] = EmailVersionRenderer(version)
            rendered = renderer.render(variables)
        subject, html, text = rendered.subject or "", rendered.html, rendered.text
    else:
        if not request.subject:
            raise ValidationFailed.at(
                "subject", "Give `subject` (or a `template_id`).", code="required"
            )
        if not request.html and not request.text:
            raise ValidationFailed.at(
                "html", "Give `html` or `text` (or a `template_id`).", code="required"
            )
        subject, html, text = request.subject, request.html, request.text
    sender = _sender(project, request.from_email, template)
    _checked_address(sender, "from")
    return {
        "project": project,
        "from_email": sender,
        "to": to,
        "reply_to": request.reply_to,
        "subject": subject,
        "html": html,
        "text": text,
        "tags": list(request.tags),
        "data": dict(request.data or {}),
        "template": template,
        "template_version": version,
        "contact": contact,
        "message_id": message_id_for(sender),
    }


def _addressed(to: list[str], suppressed: set[str]) -> dict[str, Any]:
    """Recipients and status: `to` minus the suppressed addresses; none left: suppressed."""
    recipients = [address for address in to if bare_address(address) not in suppressed]
    return {
        "recipients": recipients,
        "status": EmailStatus.QUEUED if recipients else EmailStatus.SUPPRESSED,
    }


def _prepare(
    *, project: Project, request: EmailRequest, version: TemplateVersion | None = None
) -> Prepared:
    fields = _rendered(project=project, request=request, version=version)
    to = fields["to"]
    suppressed = suppressed_among(project=project, emails=[bare_address(a) for a in to])
    return Prepared(fields={**fields, **_addressed(to, suppressed)})


def _store(prepared: Prepared, *, idempotency_key: str | None, fingerprint: str) -> Email:
    now = clock.now()
    with transaction.atomic():
        email = Email(
            # The id carries the instant of `created_at`: reads by id find its partition.
            id=uuid7(at=now),
            **prepared.fields,
            idempotency_key=idempotency_key,
            request_fingerprint=fingerprint if idempotency_key else "",
            created_at=now,
        )
        if idempotency_key is not None:
            # First: a concurrent request with the key waits here for this one's outcome.
            EmailKey.objects.create(
                email_id=email.pk,
                project_id=email.project_id,
                idempotency_key=idempotency_key,
                created_at=now,
            )
        email.save(force_insert=True)
        if email.status == EmailStatus.QUEUED:
            EmailDelivery.objects.create(email=email, next_attempt_at=now, created_at=now)
            transaction.on_commit(EMAIL_QUEUE.wake)
    return email


def _by_key(project: Project, key: str) -> Email | None:
    held = (
        EmailKey.objects.filter(project=project, idempotency_key=key)
        .values_list("email_id", "created_at")
        .first()
    )
    if held is None:
        return None
    # The email's time too: the lookup reads its partition alone.
    return Email.objects.filter(pk=held[0], created_at=held[1]).first()


def _replayed(email: Email, fingerprint: str) -> Email:
    if email.request_fingerprint != fingerprint:
        raise IdempotencyConflict(
            "This Idempotency-Key was used with another request body.",
            details=f"The key made email {email.id}.",
        )
    return email


def email_send(
    *, project: Project, request: EmailRequest, idempotency_key: str | None = None
) -> tuple[Email, bool]:
    """Stores an email and queues its delivery; returns it and whether it is new. A key
    seen in the last 24 h returns the email it made (the same body) or raises
    IdempotencyConflict (another body); concurrent requests with one key race on the
    unique index, and the losers return the winner."""
    fingerprint = request.fingerprint()
    if idempotency_key is not None:
        existing = _by_key(project, idempotency_key)
        if existing is not None:
            if existing.created_at > clock.now() - IDEMPOTENCY_WINDOW:
                return _replayed(existing, fingerprint), False
            # The key has expired: free it for this request.
            EmailKey.objects.filter(
                project=project, idempotency_key=idempotency_key, email_id=existing.pk
            ).delete()
    prepared = _prepare(project=project, request=request)
    # A send the API accepts counts against the monthly email quota once; one to
    # suppressed addresses only is not sent at all.
    queued = prepared.fields["status"] == EmailStatus.QUEUED
    try:
        with usage_reserve(project=project, meter=Meter.EMAILS_SENT, count=int(queued)):
            email = _store(prepared, idempotency_key=idempotency_key, fingerprint=fingerprint)
        return email, True
    except IntegrityError:
        if idempotency_key is None:
            raise
    # Another request with this key committed first (the insert waited for it).
    winner = _by_key(project, idempotency_key)
    if winner is None:
        raise Conflict("A concurrent request with this Idempotency-Key failed; retry.")
    return _replayed(winner, fingerprint), False


class PushTestUnavailable(Conflict):
    message = "Test sends of push templates are not available: push sending is not installed."


@dataclass(frozen=True)
class TemplateTestSent:
    """What a template test send made: an email, or a push message (by id)."""

    email_id: uuid.UUID | None = None
    push_id: uuid.UUID | None = None


def template_test_send(
    *,
    project: Project,
    template_id: uuid.UUID,
    to: str | None,
    installation_id: uuid.UUID | None = None,
    data: Mapping[str, Any] | None = None,
    contact_id: uuid.UUID | None = None,
) -> TemplateTestSent:
    """Sends a template's draft (else its published version) once: an email template to
    `to`, a push template to the installation `installation_id` (through the push
    family's sender, messaging/hooks.py)."""
    # The template is the path's resource: unknown or another project's is 404, as on
    # every other path.
    template = or_404(template_get(project=project, template_id=template_id), "No such template.")
    if template.channel == Channel.PUSH:
        if installation_id is None or to is not None:
            raise ValidationFailed.at(
                "installation_id",
                "Push templates are tested with `installation_id` (a device), not `to`.",
                code="required",
            )
    elif installation_id is not None or not to:
        raise ValidationFailed.at(
            "to", "Email templates are tested with `to` (an address).", code="required"
        )
    # `to` is one address here (not a list, as in `POST /emails`): its problem is at `to`.
    _checked_address(to, "to")
    version = template_version_current(template=template)
    if version is None:
        raise Conflict("The template has no content to send.")
    # Counted against the monthly template test quota (not the send quotas); nothing is
    # stored when the test fails.
    with usage_reserve(project=project, meter=Meter.TEMPLATE_TESTS):
        if template.channel == Channel.PUSH:
            assert installation_id is not None
            sender = push_test_sender()
            if sender is None:
                raise PushTestUnavailable()
            push_id = sender(
                project=project,
                version=version,
                installation_id=installation_id,
                data=data,
                contact_id=contact_id,
            )
            return TemplateTestSent(push_id=push_id)
        assert to is not None
        request = EmailRequest(to=[to], data=data, contact_id=contact_id, tags=["test"])
        prepared = _prepare(project=project, request=request, version=version)
        email = _store(prepared, idempotency_key=None, fingerprint="")
    return TemplateTestSent(email_id=email.id)
