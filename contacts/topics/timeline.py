"""A contact's subscription changes on its timeline in the staff console."""

import datetime as dt
from typing import Any

from contacts.models import Contact
from contacts.timeline import TimelineEntry, admin_change_url
from contacts.topics.models import Subscription


def subscription_timeline(
    *, contact: Contact, before: dt.datetime | None, limit: int, user: Any
) -> list[TimelineEntry]:
    """The contact's subscriptions at their last change, newest first (one query)."""
    subscriptions = Subscription.objects.filter(contact=contact).select_related("topic")
    if before is not None:
        subscriptions = subscriptions.filter(changed_at__lte=before)
    return [
        TimelineEntry(
            at=subscription.changed_at,
            kind="subscription",
            key=str(subscription.pk),
            title=subscription.topic.name,
            status=subscription.status,
            detail=f"by {subscription.source}",
            url=admin_change_url(subscription),
        )
        for subscription in subscriptions.order_by("-changed_at", "-id")[:limit]
    ]
