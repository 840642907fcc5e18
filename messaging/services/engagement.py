"""What recipients do with a sent email: opens, clicks and unsubscribes, whether seen by
our own pixel and redirects or reported by an ESP's webhooks.

The first open and the first click set `opened_at` / `clicked_at` with conditional
updates (the first writer wins, later ones keep its time); every open and click records
its system event, with `first` saying whether it was the first. An unsubscribe records
`sendrealm.mail.unsubscribe` only when it changed something, so repeating it is a no-op."""

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from config.api.errors import ValidationFailed
from config.registries.outbox import system_event_emit
from config.runtime import clock
from contacts.models import Contact
from contacts.services import contact_find_for_update
from contacts.topics.models import SubscriptionSource, SubscriptionStatus, Topic
from contacts.topics.selectors import topic_statuses, topics_with_subscription_of
from contacts.topics.services import subscriptions_set
from messaging.models import Email, SuppressionReason
from messaging.selectors.emails import email_get_for_link
from messaging.services.delivery_days import email_figures_count
from messaging.services.suppressions import suppression_add


def _payload(email: Email, **extra: Any) -> dict[str, Any]:
    return {
        "email_id": str(email.pk),
        "contact_id": str(email.contact_id) if email.contact_id else None,
        "template_id": str(email.template_id) if email.template_id else None,
        **extra,
    }


def _emit(email: Email, name: str, payload: dict[str, Any]) -> None:
    system_event_emit(
        project=email.project, name=name, payload=payload, contact_id=email.contact_id
    )


def _first(email: Email, field: str, at: dt.datetime) -> bool:
    """Sets `field` to `at` unless it is set already; whether this call set it."""
    # `created_at` too: the update looks in the email's partition alone.
    won = Email.objects.filter(
        pk=email.pk, created_at=email.created_at, **{f"{field}__isnull": True}
    ).update(**{field: at})
    if won:
        setattr(email, field, at)
    return bool(won)


def email_open_record(
    *, email_id: uuid.UUID | str, at: dt.datetime | None = None, source: str = "pixel"
) -> Email | None:
    """Records an open (the pixel, or an ESP with `source="esp"`): the first sets
    `opened_at`; each records `sendrealm.mail.open`. None when the email is gone."""
    at = at or clock.now()
    with transaction.atomic():
        email = email_get_for_link(email_id=email_id)
        if email is None:
            return None
        first = _first(email, "opened_at", at)
        if first:
            email_figures_count([(email.project_id, at, "opened")])
        _emit(email, "mail.open", _payload(email, source=source, first=first))
    return email


def email_click_record(
    *,
    email_id: uuid.UUID | str,
    url: str,
    at: dt.datetime | None = None,
    source: str = "redirect",
) -> Email | None:
    """Records a click on `url` (the redirect, or an ESP with `source="esp"`): the first
    sets `clicked_at`; each records `sendrealm.mail.click`. A click implies an open: when
    none was seen (images blocked), it sets `opened_at` and records `sendrealm.mail.open`
    with `source: "click"` first. None when the email is gone."""
    at = at or clock.now()
    with transaction.atomic():
        email = email_get_for_link(email_id=email_id)
        if email is None:
            return None
        figures = []
        if _first(email, "opened_at", at):
            figures.append((email.project_id, at, "opened"))
            _emit(email, "mail.open", _payload(email, source="click", first=True))
        first = _first(email, "clicked_at", at)
        if first:
            figures.append((email.project_id, at, "clicked"))
        email_figures_count(figures)
        _emit(email, "mail.click", _payload(email, url=url, source=source, first=first))
    return email


@dataclass(frozen=True)
class Unsubscribed:
    """What an unsubscribe did: left `topic` (the email's), or suppressed the address
    (`topic` None); `changed` is False for a repeat."""

    email: Email
    recipient: str
    topic: Topic | None
    changed: bool


def _contact_for(email: Email, recipient: str) -> Contact | None:
    """The email's contact, else the active contact with the recipient's address; its
    row locked, which orders this change against other changes of its subscriptions."""
    if email.contact_id is not None:
        contact = contact_find_for_update(project=email.project, contact_id=email.contact_id)
        if contact is not None:
            return contact
    try:
        return contact_find_for_update(project=email.project, email=recipient)
    except ValidationFailed:
        return None


def _leave_topic(email: Email, topic: Topic, contact: Contact) -> bool:
    """Unsubscribes the contact from the topic; whether its effective status changed."""
    topics = list(topics_with_subscription_of(contact=contact).filter(pk=topic.pk))
    if not topics:
        return False
    [current] = topic_statuses(contact=contact, topics=topics)
    if current.status == SubscriptionStatus.UNSUBSCRIBED:
        return False
    subscriptions_set(
        project=email.project,
        contact_id=contact.id,
        changes=[{"topic_id": topic.id, "status": SubscriptionStatus.UNSUBSCRIBED}],
        source=SubscriptionSource.UNSUBSCRIBE_LINK,
    )
    return True


def email_unsubscribe_record(
    *, email_id: uuid.UUID | str, recipient: str, source: str = "link"
) -> Unsubscribed | None:
    """Unsubscribes a recipient of an email (its unsubscribe page, the one-click header,
    or an ESP's report with `source="esp"`): the contact leaves the email's topic when it
    has one (and `sendrealm.topic.unsubscribed` follows), else the address is suppressed
    with reason `unsubscribe`. Records `sendrealm.mail.unsubscribe` when that changed
    something; a repeat changes nothing and records nothing. None when the email is gone
    or the recipient is not an address."""
    with transaction.atomic():
        email = email_get_for_link(email_id=email_id)
        if email is None:
            return None
        topic = email.topic
        contact = _contact_for(email, recipient) if topic is not None else None
        if topic is not None and contact is not None:
            changed = _leave_topic(email, topic, contact)
        else:
            topic = None
            try:
                _, changed = suppression_add(
                    project=email.project, email=recipient, reason=SuppressionReason.UNSUBSCRIBE
                )
            except ValidationFailed:
                return None
        if changed:
            payload = _payload(
                email, topic_id=str(topic.id) if topic is not None else None, source=source
            )
            _emit(email, "mail.unsubscribe", payload)
    return Unsubscribed(email=email, recipient=recipient, topic=topic, changed=changed)
