"""Reads of topics and of a contact's subscriptions."""

import datetime as dt
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    BooleanField,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
)
from django.db.models.functions import Lower

from config.db.cursor import binary_cursor
from contacts.models import Contact
from contacts.selectors import contact_list
from contacts.topics.models import Subscription, SubscriptionStatus, Topic
from tenancy.models import Project


@dataclass(frozen=True)
class TopicStatus:
    """A contact's effective status for one topic: its explicit choice or the default."""

    topic: Topic
    contact_id: uuid.UUID
    status: str
    source: str | None
    changed_at: dt.datetime | None

    @classmethod
    def of(cls, topic: Topic, contact_id: uuid.UUID, sub: Subscription | None) -> "TopicStatus":
        if sub is None:
            return cls(topic, contact_id, topic.default_status, None, None)
        return cls(topic, contact_id, sub.status, sub.source, sub.changed_at)


def topic_list(*, project: Project) -> QuerySet[Topic]:
    return Topic.objects.filter(project=project)


def topic_get(*, project: Project, topic_id: uuid.UUID | str) -> Topic | None:
    return topic_list(project=project).filter(id=topic_id).first()


def topics_with_subscription_of(*, contact: Contact) -> QuerySet[Topic]:
    """Every topic of the contact's project, each with `contact_subscriptions` holding the
    contact's explicit choice (zero or one row)."""
    return Topic.objects.filter(project_id=contact.project_id).prefetch_related(
        Prefetch(
            "subscriptions",
            queryset=Subscription.objects.filter(contact=contact),
            to_attr="contact_subscriptions",
        )
    )


def topic_statuses(*, contact: Contact, topics: list[Topic]) -> list[TopicStatus]:
    """Statuses for topics fetched through `topics_with_subscription_of`."""
    return [
        TopicStatus.of(
            topic, contact.id, next(iter(getattr(topic, "contact_subscriptions", [])), None)
        )
        for topic in topics
    ]


def subscribed_contacts(*, topic: Topic) -> QuerySet[Contact]:
    """Active contacts whose effective status for `topic` is subscribed (for sends)."""
    contacts = contact_list(project=topic.project)
    if topic.default_status == SubscriptionStatus.SUBSCRIBED:
        return contacts.exclude(
            subscriptions__topic=topic, subscriptions__status=SubscriptionStatus.UNSUBSCRIBED
        )
    return contacts.filter(
        subscriptions__topic=topic, subscriptions__status=SubscriptionStatus.SUBSCRIBED
    )


def topics_by_names(*, project: Project, names: Collection[str]) -> dict[str, Topic]:
    """The project's topics among `names` (any case), keyed by lower-cased name."""
    if not names:
        return {}
    keys = {name.lower() for name in names}
    found = Topic.objects.alias(key=Lower("name")).filter(project=project, key__in=keys)
    return {topic.name.lower(): topic for topic in found}


def subscriptions_existing(
    *, topic_ids: Collection[uuid.UUID], contact_ids: Collection[uuid.UUID]
) -> set[tuple[uuid.UUID, uuid.UUID]]:
    """The `(topic_id, contact_id)` pairs among these topics and contacts that hold an
    explicit choice (either status), in one query."""
    if not topic_ids or not contact_ids:
        return set()
    with binary_cursor() as cursor:
        cursor.execute(
            # S608: the model's table name.
            f"SELECT topic_id, contact_id FROM {Subscription._meta.db_table} "  # noqa: S608
            "WHERE topic_id = ANY(%b) AND contact_id = ANY(%b)",
            [list(topic_ids), list(contact_ids)],
        )
        return set(cursor.fetchall())


def topic_audience(
    *, topic: Topic, after: uuid.UUID | None = None, upto: uuid.UUID | None = None
) -> QuerySet[Contact]:
    """Every active contact the topic concerns, annotated `topic_subscribed` (its effective
    status): for an opt-in topic the contacts with an explicit choice, for an opt-out topic
    every contact of the project. Campaigns send to the subscribed ones and count the
    others as unsubscribed. With `after` and `upto`, only contacts whose id falls in
    (after, upto], read off an index in id order."""
    if topic.default_status == SubscriptionStatus.SUBSCRIBED:
        unsubscribed = Subscription.objects.filter(
            topic=topic, contact=OuterRef("pk"), status=SubscriptionStatus.UNSUBSCRIBED
        )
        contacts = contact_list(project=topic.project)
        if after is not None:
            contacts = contacts.filter(id__gt=after)
        if upto is not None:
            contacts = contacts.filter(id__lte=upto)
        return contacts.annotate(topic_subscribed=~Exists(unsubscribed))
    chosen: dict[str, Any] = {"subscriptions__topic": topic}
    # The range on both sides of the join (see `audience_member_contacts`).
    if after is not None:
        chosen["subscriptions__contact_id__gt"] = after
        chosen["id__gt"] = after
    if upto is not None:
        chosen["subscriptions__contact_id__lte"] = upto
        chosen["id__lte"] = upto
    # One filter call, and the annotation reads the subscription row it joined.
    return (
        contact_list(project=topic.project)
        .filter(**chosen)
        .annotate(
            topic_subscribed=ExpressionWrapper(
                Q(subscriptions__status=SubscriptionStatus.SUBSCRIBED),
                output_field=BooleanField(),
            )
        )
    )
