"""Reads of a contact's preferences: its status for every topic of its project and whether
it unsubscribed from all mail (its address on the suppression list)."""

from dataclasses import dataclass

from contacts.models import Contact
from contacts.topics.models import SubscriptionStatus
from contacts.topics.selectors import TopicStatus, topic_statuses, topics_with_subscription_of
from messaging.models import Suppression, SuppressionReason
from messaging.selectors.suppressions import suppression_get
from tenancy.models import Project


@dataclass(frozen=True)
class Preferences:
    """What the preference page and `GET /contacts/{id}/preferences` show of a contact."""

    contact: Contact
    topics: list[TopicStatus]
    # The address's entry on the suppression list, whatever put it there.
    suppression: Suppression | None

    @property
    def unsubscribed_all(self) -> bool:
        """No email goes to the contact's address (`unsubscribe from all` put it on the
        suppression list, or a bounce, complaint or the project did)."""
        return self.suppression is not None

    @property
    def chosen_by_contact(self) -> bool:
        """Whether the contact itself can lift the suppression (it unsubscribed): a bounce,
        a complaint or the project's own entry stays until the project removes it."""
        return (
            self.suppression is not None
            and self.suppression.reason == SuppressionReason.UNSUBSCRIBE
        )


def topic_key(status: TopicStatus) -> str:
    """A topic's key: its name in lower case, which is unique in its project (any case) and
    how imports name topics. It changes with the name; `topic_id` never does."""
    return status.topic.name.lower()


def is_subscribed(status: TopicStatus) -> bool:
    return status.status == SubscriptionStatus.SUBSCRIBED


def preferences_get(*, project: Project, contact: Contact) -> Preferences:
    """The contact's status for every topic of the project (oldest topic first) and its
    address's suppression, in three queries."""
    topics = list(topics_with_subscription_of(contact=contact).order_by("created_at", "id"))
    suppression = suppression_get(project=project, email=contact.email) if contact.email else None
    return Preferences(
        contact=contact,
        topics=topic_statuses(contact=contact, topics=topics),
        suppression=suppression,
    )
