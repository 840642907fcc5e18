"""Sending push notifications: validation, rendering per recipient contact, the message
with one delivery per installation stored in one transaction and queued after commit.
Test sends are testsends.py, opens opens.py; delivery (the provider side) is delivery.py.

An installation whose platform's provider is missing, disabled or not ready gets a
`failed` delivery with the reason at once (nothing is sent to it, it stays active); the
others are queued. So a send answers 202 whatever the providers' state, and the message
says per device what happened."""

import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from config.api.errors import Conflict, IdempotencyConflict, Issue, ValidationFailed
from config.runtime import clock
from config.workqueue.models import WorkStatus
from contacts.models import Contact
from contacts.selectors import contact_get
from messaging.models import Channel, MessageTemplate, TemplateVersion
from messaging.services.rendering import EventLike, render_push, template_context
from messaging.services.templates import template_published_to_send
from pushproviders.models import (
    PushApp,
    PushDelivery,
    PushDeliveryState,
    PushInstallation,
    PushMessage,
    PushMessageStatus,
)
from pushproviders.queue import PUSH_QUEUE
from pushproviders.readiness import SendProblem, provider_send_problem
from pushproviders.selectors import push_app_get, push_installation_list, push_provider_for
from pushproviders.services.outcomes import push_event_emit
from tenancy.models import Meter, Project
from tenancy.usage import Reservation, usage_reserve

IDEMPOTENCY_WINDOW = dt.timedelta(hours=24)
# Installations one send may name; a contact's own are not bounded here.
MAX_INSTALLATIONS = 100


def payload_data(value: Mapping[str, Any] | None) -> dict[str, str]:
    """`data` as devices get it: FCM's data map (and so every platform's here) holds
    strings, so strings stay as they are and any other value becomes its compact JSON."""
    return {
        str(key): item
        if isinstance(item, str)
        else json.dumps(item, separators=(",", ":"), ensure_ascii=False)
        for key, item in (value or {}).items()
    }


@dataclass(frozen=True)
class Content:
    """What one device is sent."""

    title: str | None
    body: str | None
    data: dict[str, str]


@dataclass(frozen=True)
class _Target:
    installation: PushInstallation
    content: Content
    problem: SendProblem | None


# --- validation ----------------------------------------------------------------------------


def _not_found(path: str, message: str) -> ValidationFailed:
    return ValidationFailed.at(path, message, code="not_found")


def _app(project: Project, app_ref: uuid.UUID | str | None) -> PushApp | None:
    if app_ref is None:
        return None
    app = push_app_get(project=project, app_ref=app_ref)
    if app is None:
        raise _not_found("app_id", "No such push app.")
    return app


def _contact(project: Project, contact_id: uuid.UUID, path: str = "contact_id") -> Contact:
    contact = contact_get(project=project, contact_id=contact_id)
    if contact is None:
        raise _not_found(path, "No such contact.")
    return contact


def _installations_of(
    project: Project, app: PushApp | None, contact: Contact
) -> list[PushInstallation]:
    installations = list(
        push_installation_list(project=project, app=app, contact_id=contact.pk)
        .filter(active=True)
        .select_related("contact")
        .order_by("created_at", "id")
    )
    if not installations:
        where = " of this app" if app is not None else ""
        raise ValidationFailed.at(
            "contact_id",
            f"The contact has no active installations{where}: nothing to send to.",
            code="no_installations",
        )
    return installations


def _installations_named(
    project: Project, app: PushApp | None, ids: Sequence[uuid.UUID], *, path: str
) -> list[PushInstallation]:
    found = {
        installation.pk: installation
        for installation in push_installation_list(project=project, app=app)
        .filter(id__in=list(ids))
        .select_related("contact")
    }
    issues: list[Issue] = []
    seen: set[uuid.UUID] = set()
    for index, pk in enumerate(ids):
        at = f"{path}.{index}" if path == "installation_ids" else path
        installation = found.get(pk)
        if pk in seen:
            issues.append(Issue(code="duplicate", path=at, message="Listed twice."))
        elif installation is None:
            issues.append(Issue(code="not_found", path=at, message="No such installation."))
        elif not installation.active:
            issues.append(
                Issue(
                    code="inactive",
                    path=at,
                    message="The installation is not active (its token was refused); "
                    "the device must register again.",
                )
            )
        seen.add(pk)
    if issues:
        raise ValidationFailed(issues=issues)
    return [found[pk] for pk in ids]


# --- building the message ------------------------------------------------------------------


class _Renderer:
    """Renders a version once per recipient contact."""

    def __init__(
        self,
        *,
        project: Project,
        version: TemplateVersion,
        data: Mapping[str, Any] | None,
        event: EventLike | None,
        extra: Mapping[str, Any] | None,
        contact: Contact | None = None,
    ) -> None:
        self.project, self.version, self.data = project, version, data
        self.event, self.extra = event, extra
        # Renders for this contact whatever the installation's (a test's `contact_id`).
        self.contact = contact
        self.done: dict[Any, Content] = {}

    def __call__(self, installation: PushInstallation) -> Content:
        contact = self.contact or installation.contact
        if contact.pk not in self.done:
            variables = template_context(
                project=self.project,
                contact=contact,
                event=self.event,
                data=self.data,
                extra=self.extra,
            )
            rendered = render_push(self.version, variables)
            self.done[contact.pk] = Content(
                title=rendered.title, body=rendered.body, data=payload_data(rendered.data)
            )
        return self.done[contact.pk]


def _targets(
    installations: list[PushInstallation],
    content: Content | Callable[[PushInstallation], Content],
) -> list[_Target]:
    """Each installation with its content (the same for all, or made per installation)
    and, when its provider cannot send, why."""
    problems: dict[tuple[Any, str], SendProblem | None] = {}
    targets = []
    for installation in installations:
        key = (installation.app_id, installation.platform)
        if key not in problems:
            provider = push_provider_for(app=installation.app, platform=installation.platform)
            problems[key] = provider_send_problem(provider, platform=installation.platform)
        targets.append(
            _Target(
                installation=installation,
                content=content if isinstance(content, Content) else content(installation),
                problem=problems[key],
            )
        )
    return targets


def _store(
    *,
    project: Project,
    app: PushApp | None,
    targets: list[_Target],
    template: MessageTemplate | None = None,
    version: TemplateVersion | None = None,
    test: bool = False,
    idempotency_key: str | None = None,
    fingerprint: str = "",
) -> PushMessage:
    """The message and its deliveries, in one transaction; the queue is woken after it."""
    now = clock.now()
    first = targets[0].content
    contacts = {target.installation.contact_id for target in targets}
    queued = any(target.problem is None for target in targets)
    with transaction.atomic():
        message = PushMessage.objects.create(
            project=project,
            app=app if app is not None else targets[0].installation.app,
            template=template,
            template_version=version,
            contact_id=contacts.pop() if len(contacts) == 1 else None,
            title=first.title,
            body=first.body,
            data=first.data,
            test=test,
            status=PushMessageStatus.QUEUED if queued else PushMessageStatus.FAILED,
            created_at=now,
            idempotency_key=idempotency_key,
            request_fingerprint=fingerprint if idempotency_key else "",
        )
        deliveries = []
        for position, target in enumerate(targets):
            installation, content, problem = target.installation, target.content, target.problem
            delivery = PushDelivery(
                message=message,
                message_created_at=message.created_at,
                installation=installation,
                contact_id=installation.contact_id,
                platform=installation.platform,
                position=position,
                title=content.title or "",
                body=content.body or "",
                data=content.data,
                created_at=now,
            )
            if problem is None:
                delivery.next_attempt_at = now
            else:
                # Final at once, and in the dead-letter queue: staff can requeue it once the
                # provider is fixed.
                delivery.state = PushDeliveryState.FAILED
                delivery.error = problem.message
                delivery.status = WorkStatus.DEAD_LETTERED
                delivery.last_error = problem.message
                delivery.error_code = problem.code
            deliveries.append(delivery)
        PushDelivery.objects.bulk_create(deliveries)
        for delivery in deliveries:
            if delivery.state == PushDeliveryState.FAILED:
                push_event_emit(
                    name="push.failure",
                    message=message,
                    delivery=delivery,
                    status=delivery.state,
                    error=delivery.error,
                )
        if queued:
            transaction.on_commit(PUSH_QUEUE.wake)
    return message


# --- sending -------------------------------------------------------------------------------


def _fingerprint(body: Mapping[str, Any]) -> str:
    encoded = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()


def _replayed(message: PushMessage, fingerprint: str) -> PushMessage:
    if message.request_fingerprint != fingerprint:
        raise IdempotencyConflict(
            "This Idempotency-Key was used with another request body.",
            details=f"The key made push message {message.id}.",
        )
    return message


def _by_key(project: Project, key: str) -> PushMessage | None:
    return PushMessage.objects.filter(project=project, idempotency_key=key).first()


def push_send(
    *,
    project: Project,
    app_ref: uuid.UUID | str | None,
    contact_id: uuid.UUID | None = None,
    installation_ids: Sequence[uuid.UUID] | None = None,
    template_id: uuid.UUID | None = None,
    title: str | None = None,
    body: str | None = None,
    data: Mapping[str, Any] | None = None,
    event: EventLike | None = None,
    extra: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
) -> tuple[PushMessage, bool]:
    """Stores a push message to a contact's active installations of the app (or to the
    installations named) and queues its deliveries; returns it and whether it is new.

    With `template_id` the published version is rendered per recipient contact (`data`,
    `event` and `extra` are its variables); otherwise `title`/`body`/`data` are sent as
    given. `app_ref` None sends through every app of the project. A key seen in the last
    24 h returns the message it made (the same body) or raises IdempotencyConflict."""
    fingerprint = _fingerprint(
        {
            "app_id": str(app_ref) if app_ref is not None else None,
            "contact_id": contact_id,
            "installation_ids": list(installation_ids) if installation_ids is not None else None,
            "template_id": template_id,
            "title": title,
            "body": body,
            "data": data,
        }
    )
    if idempotency_key is not None:
        existing = _by_key(project, idempotency_key)
        if existing is not None:
            if existing.created_at > clock.now() - IDEMPOTENCY_WINDOW:
                return _replayed(existing, fingerprint), False
            # The key has expired: free it for this request.
            PushMessage.objects.filter(pk=existing.pk, idempotency_key=idempotency_key).update(
                idempotency_key=None
            )
    if (contact_id is None) == (installation_ids is None):
        raise ValidationFailed.at(
            "contact_id", "Give exactly one of `contact_id` or `installation_ids`."
        )
    if template_id is not None and (title is not None or body is not None):
        raise ValidationFailed.at(
            "title" if title is not None else "body",
            "Give `template_id` or inline `title`/`body`, not both.",
            code="not_with_template",
        )
    if template_id is None and not title and not body:
        raise ValidationFailed.at(
            "body", "Give `title` or `body` (or a `template_id`).", code="required"
        )
    app = _app(project, app_ref)
    if installation_ids is not None:
        if not 1 <= len(installation_ids) <= MAX_INSTALLATIONS:
            raise ValidationFailed.at(
                "installation_ids", f"Give 1 to {MAX_INSTALLATIONS} installations."
            )
        installations = _installations_named(
            project, app, installation_ids, path="installation_ids"
        )
    else:
        assert contact_id is not None
        installations = _installations_of(project, app, _contact(project, contact_id))
    template: MessageTemplate | None = None
    version: TemplateVersion | None = None
    content: Content | _Renderer
    if template_id is not None:
        template, version = template_published_to_send(
            project=project, template_id=template_id, channel=Channel.PUSH
        )
        content = _Renderer(project=project, version=version, data=data, event=event, extra=extra)
    else:
        content = Content(title=title, body=body, data=payload_data(data))
    targets = _targets(installations, content)
    try:
        with _quota(project, targets):
            message = _store(
                project=project,
                app=app,
                targets=targets,
                template=template,
                version=version,
                idempotency_key=idempotency_key,
                fingerprint=fingerprint,
            )
        return message, True
    except IntegrityError:
        if idempotency_key is None:
            raise
    # Another request with this key committed first (the insert waited for it).
    winner = _by_key(project, idempotency_key)
    if winner is None:
        raise Conflict("A concurrent request with this Idempotency-Key failed; retry.")
    return _replayed(winner, fingerprint), False


def _quota(project: Project, targets: list[_Target]) -> Reservation:
    """Counts the deliveries that will be queued against the monthly push quota."""
    queued = sum(1 for target in targets if target.problem is None)
    return usage_reserve(project=project, meter=Meter.PUSH_SENT, count=queued)
