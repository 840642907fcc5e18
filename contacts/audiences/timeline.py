"""A contact's audience memberships on its timeline in the staff console."""

import datetime as dt
from typing import Any

from contacts.audiences.models import AudienceMembership
from contacts.models import Contact
from contacts.timeline import TimelineEntry, admin_change_url


def membership_timeline(
    *, contact: Contact, before: dt.datetime | None, limit: int, user: Any
) -> list[TimelineEntry]:
    """When the contact joined each audience it is in, newest first (one query); leaving
    shows as the `sendrealm.audience.left` event."""
    memberships = AudienceMembership.objects.filter(contact=contact).select_related("audience")
    if before is not None:
        memberships = memberships.filter(created_at__lte=before)
    return [
        TimelineEntry(
            at=membership.created_at,
            kind="membership",
            key=str(membership.pk),
            title=membership.audience.name,
            status="member",
            url=admin_change_url(membership),
        )
        for membership in memberships.order_by("-created_at", "-id")[:limit]
    ]
