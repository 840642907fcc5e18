"""Writes of topics and subscriptions."""

import uuid
from collections.abc import Collection, Sequence
from typing import Any

from django.db import IntegrityError, transaction

from config.api.errors import Issue, NotFound, ValidationFailed
from config.db.cursor import binary_cursor
from config.db.update import model_update
from config.registries.outbox import SystemEvent, system_events_emit
from config.runtime import clock
from contacts.services import contact_event_emit, contact_get_for_update, contacts_lock_active
from contacts.topics.errors import TopicNameTaken
from contacts.topics.models import Subscription, SubscriptionSource, SubscriptionStatus, Topic
from contacts.topics.selectors import TopicStatus
from tenancy.models import Project


def _locked_topic(project: Project, topic_id: uuid.UUID | str) -> Topic:
    topic = Topic.objects.select_for_update().filter(project=project, id=topic_id).first()
    if topic is None:
        raise NotFound("No such topic.")
    return topic


def topic_create(
    *,
    project: Project,
    name: str,
    description: str | None = None,
    default_status: str = SubscriptionStatus.UNSUBSCRIBED,
) -> Topic:
    """A new topic; its name is unique in the project (any case)."""
    try:
        with transaction.atomic():
            return Topic.objects.create(
                project=project, name=name, description=description, default_status=default_status
            )
    except IntegrityError:
        raise TopicNameTaken() from None


def topic_update(*, project: Project, topic_id: uuid.UUID | str, changes: dict[str, Any]) -> Topic:
    """Changes `name`, `description` or `default_status`. A new default changes the
    effective status of contacts without an explicit choice, but emits no events: nobody
    subscribed or unsubscribed."""
    try:
        with transaction.atomic():
            topic = _locked_topic(project, topic_id)
            model_update(topic, fields=changes)
            return topic
    except IntegrityError:
        raise TopicNameTaken() from None


def topic_delete(*, project: Project, topic_id: uuid.UUID | str) -> Topic:
    """Deletes a topic and every subscription to it (no events)."""
    with transaction.atomic():
        topic = _locked_topic(project, topic_id)
        Topic.objects.filter(pk=topic.pk).delete()
        return topic


def subscriptions_set(
    *,
    project: Project,
    contact_id: uuid.UUID | str,
    changes: Sequence[dict[str, Any]],
    source: str = SubscriptionSource.API,
) -> list[TopicStatus]:
    """Sets a contact's status for the listed topics (others stay as they are).

    `changes` holds `{"topic_id", "status"}` items. A change of the effective status emits
    `sendrealm.topic.subscribed` or `.unsubscribed`, with the source, in the same
    transaction. Unknown or repeated topics reject the whole request. Returns the statuses
    of the listed topics in the order given.
    """
    seen: dict[str, int] = {}
    issues: list[Issue] = []
    for index, item in enumerate(changes):
        key = str(item["topic_id"])
        if key in seen:
            issues.append(
                Issue(
                    code="duplicate",
                    path=f"topics.{index}.topic_id",
                    message="This topic is listed twice.",
                )
            )
        seen[key] = index
    if issues:
        raise ValidationFailed("Each topic may be listed once.", issues=issues)
    with transaction.atomic():
        # The contact's row lock serialises changes to its subscriptions and its deletion.
        contact = contact_get_for_update(project=project, contact_id=contact_id)
        topics = {str(t.id): t for t in Topic.objects.filter(project=project, id__in=list(seen))}
        missing = [
            Issue(code="not_found", path=f"topics.{index}.topic_id", message="No such topic.")
            for key, index in seen.items()
            if key not in topics
        ]
        if missing:
            raise ValidationFailed("Some topics do not exist.", issues=missing)
        current = {
            str(sub.topic_id): sub
            for sub in Subscription.objects.filter(contact=contact, topic_id__in=list(topics))
        }
        now = clock.now()
        results = []
        for item in changes:
            topic = topics[str(item["topic_id"])]
            status = item["status"]
            sub = current.get(str(topic.id))
            before = sub.status if sub is not None else topic.default_status
            if sub is None:
                sub = Subscription.objects.create(
                    topic=topic, contact=contact, status=status, source=source, changed_at=now
                )
            elif sub.status != status:
                sub.status, sub.source, sub.changed_at = status, source, now
                sub.save(update_fields=["status", "source", "changed_at", "updated_at"])
            if before != status:
                contact_event_emit(
                    project=project,
                    name=f"topic.{status}",
                    contact=contact,
                    payload={
                        "topic_id": str(topic.id),
                        "topic_name": topic.name,
                        "contact_id": str(contact.id),
                        "source": source,
                    },
                )
            results.append(TopicStatus.of(topic, contact.id, sub))
        return results


_SUBSCRIBE_SQL = """
INSERT INTO {table} (id, topic_id, contact_id, status, source, changed_at, created_at, updated_at)
SELECT gen_random_uuid(), u.topic_id, u.contact_id, %(status)s, %(source)s, %(now)s, %(now)s,
       %(now)s
FROM unnest(%(topics)b::uuid[], %(contacts)b::uuid[]) AS u(topic_id, contact_id)
ON CONFLICT (topic_id, contact_id) DO NOTHING
RETURNING topic_id, contact_id
"""


def subscriptions_subscribe_many(
    *,
    project: Project,
    pairs: Collection[tuple[Topic, uuid.UUID]],
    source: str = SubscriptionSource.IMPORT,
    emit: bool = True,
) -> set[tuple[uuid.UUID, uuid.UUID]]:
    """Records `subscribed` for contacts without a choice for the topic, in one statement
    (PostgreSQL). A contact's existing choice, `unsubscribed` included, is kept: a bulk
    writer never overrides consent. Returns the `(topic_id, contact_id)` pairs it
    recorded; with `emit`, those whose effective status changed (the topic's default is
    `unsubscribed`) record `sendrealm.topic.subscribed`.

    The contacts are locked first and deleted ones left out, as `subscriptions_set` does."""
    if not pairs:
        return set()
    identities = contacts_lock_active(
        project=project, contact_ids={contact_id for _, contact_id in pairs}
    )
    topics = {topic.id: topic for topic, _ in pairs}
    live = sorted((topic.id, contact_id) for topic, contact_id in pairs if contact_id in identities)
    if not live:
        return set()
    with binary_cursor() as cursor:
        cursor.execute(
            _SUBSCRIBE_SQL.format(table=Subscription._meta.db_table),
            {
                "status": SubscriptionStatus.SUBSCRIBED,
                "source": source,
                "now": clock.now(),
                "topics": [topic_id for topic_id, _ in live],
                "contacts": [contact_id for _, contact_id in live],
            },
        )
        created = {(topic_id, contact_id) for topic_id, contact_id in cursor.fetchall()}
    if emit:
        for topic_id, topic in topics.items():
            if topic.default_status == SubscriptionStatus.SUBSCRIBED:
                continue  # Already subscribed by default: nothing changed.
            system_events_emit(
                project=project,
                name="topic.subscribed",
                events=[
                    SystemEvent(
                        payload={
                            "topic_id": str(topic_id),
                            "topic_name": topic.name,
                            "contact_id": str(contact_id),
                            "source": source,
                        },
                        contact_id=contact_id,
                        email=identities[contact_id][0],
                        external_id=identities[contact_id][1],
                    )
                    for pair_topic, contact_id in live
                    if pair_topic == topic_id and (topic_id, contact_id) in created
                ],
            )
    return created
