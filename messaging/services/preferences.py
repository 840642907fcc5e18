"""Writes of a contact's preferences: its topics, through the topics' own service (so each
change records `sendrealm.topic.subscribed` / `.unsubscribed` as any change does), and
"unsubscribe from all", which puts its address on the suppression list."""

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from config.api.errors import Conflict, Issue, ValidationFailed
from contacts.models import Contact
from contacts.services import contact_event_emit, contact_get_for_update
from contacts.topics.models import SubscriptionSource, SubscriptionStatus
from contacts.topics.selectors import topic_list
from contacts.topics.services import subscriptions_set
from messaging.models import SuppressionReason
from messaging.selectors.preferences import Preferences, preferences_get
from messaging.selectors.suppressions import suppression_get
from messaging.services.suppressions import suppression_add, suppression_remove
from tenancy.models import Project


def _conflicts(topics: Sequence[Mapping[str, Any]]) -> list[Issue]:
    return [
        Issue(
            code="conflict",
            path=f"topics.{index}.subscribed",
            message="A topic cannot be subscribed while unsubscribing from all.",
        )
        for index, item in enumerate(topics)
        if item["subscribed"]
    ]


def _unsubscribe_all(project: Project, contact: Contact, source: str) -> None:
    if not contact.email:
        raise Conflict(
            "This contact has no email address to unsubscribe; unsubscribe it from topics.",
            issues=[
                Issue(
                    code="no_email",
                    path="unsubscribed_all",
                    message="The contact has no email address.",
                )
            ],
        )
    _, created = suppression_add(
        project=project, email=contact.email, reason=SuppressionReason.UNSUBSCRIBE
    )
    if created:
        # As an unsubscribe link does; there is no email behind the preference page.
        contact_event_emit(
            project=project,
            name="mail.unsubscribe",
            contact=contact,
            payload={
                "email_id": None,
                "contact_id": str(contact.id),
                "template_id": None,
                "topic_id": None,
                "source": source,
            },
        )


def _resubscribe(project: Project, contact: Contact) -> None:
    if not contact.email:
        return
    entry = suppression_get(project=project, email=contact.email)
    if entry is None:
        return
    if entry.reason != SuppressionReason.UNSUBSCRIBE:
        raise Conflict(
            f"The address is suppressed for `{entry.reason}`, which the contact cannot lift; "
            "remove it with DELETE /suppressions/{email}.",
            issues=[
                Issue(
                    code="suppressed",
                    path="unsubscribed_all",
                    message=f"The address is suppressed for `{entry.reason}`.",
                )
            ],
        )
    suppression_remove(project=project, email=contact.email)


def preferences_update(
    *,
    project: Project,
    contact_id: uuid.UUID | str,
    topics: Sequence[Mapping[str, Any]] = (),
    unsubscribed_all: bool | None = None,
    source: str = SubscriptionSource.API,
) -> Preferences:
    """Changes the topics listed (`{"topic_id", "subscribed"}` items; the others stay as
    they are) and, when given, `unsubscribed_all`, at once and in one transaction.

    `unsubscribed_all=True` unsubscribes the contact from every topic of the project
    (an explicit choice, so an opt-out topic made later does not bring it back) and
    suppresses its address with reason `unsubscribe`, which every send honours;
    `False` takes an `unsubscribe` entry off the list (409 for any other reason, and for
    `True` on a contact without an email) and leaves the topics as they are. Unknown or
    repeated topics, or a topic subscribed in the same request as `unsubscribed_all=True`,
    reject the whole request. A repeat changes nothing and records nothing."""
    if unsubscribed_all:
        issues = _conflicts(topics)
        if issues:
            raise ValidationFailed(
                "Unsubscribing from all leaves no topic subscribed.", issues=issues
            )
    with transaction.atomic():
        # The contact's row lock orders concurrent changes of its preferences (and the
        # topics' service takes the same lock).
        contact = contact_get_for_update(project=project, contact_id=contact_id)
        changes = [
            {
                "topic_id": item["topic_id"],
                "status": SubscriptionStatus.SUBSCRIBED
                if item["subscribed"]
                else SubscriptionStatus.UNSUBSCRIBED,
            }
            for item in topics
        ]
        if unsubscribed_all:
            named = {str(item["topic_id"]) for item in topics}
            changes += [
                {"topic_id": topic_id, "status": SubscriptionStatus.UNSUBSCRIBED}
                for topic_id in topic_list(project=project)
                .order_by("created_at", "id")
                .values_list("id", flat=True)
                if str(topic_id) not in named
            ]
        if changes:
            subscriptions_set(
                project=project, contact_id=contact.id, changes=changes, source=source
            )
        if unsubscribed_all is True:
            _unsubscribe_all(project, contact, source)
        elif unsubscribed_all is False:
            _resubscribe(project, contact)
        return preferences_get(project=project, contact=contact)
