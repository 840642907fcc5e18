"""A contact's push notifications on its timeline in the staff console (contacts.hooks)."""

import datetime as dt
from typing import Any

from contacts.models import Contact
from contacts.timeline import TimelineEntry, admin_change_url
from pushproviders.models import PushDelivery


def push_timeline(
    *, contact: Contact, before: dt.datetime | None, limit: int, user: Any
) -> list[TimelineEntry]:
    """The contact's push deliveries, newest first, with their status (one query)."""
    deliveries = PushDelivery.objects.filter(contact=contact).select_related("message")
    if before is not None:
        deliveries = deliveries.filter(created_at__lte=before)
    return [
        TimelineEntry(
            at=delivery.created_at,
            kind="push",
            key=str(delivery.pk),
            title=delivery.title or delivery.body or "(no title)",
            status=delivery.state,
            detail=delivery.platform + (f" · {delivery.error}" if delivery.error else ""),
            url=admin_change_url(delivery),
        )
        for delivery in deliveries.order_by("-created_at", "-id")[:limit]
    ]
