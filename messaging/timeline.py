"""A contact's emails on its timeline in the staff console (contacts.hooks)."""

import datetime as dt
from typing import Any

from contacts.models import Contact
from contacts.timeline import TimelineEntry, admin_change_url
from messaging.models import Email


def email_timeline(
    *, contact: Contact, before: dt.datetime | None, limit: int, user: Any
) -> list[TimelineEntry]:
    """The contact's emails, newest first, with their status (one query)."""
    emails = Email.objects.filter(contact=contact)
    if before is not None:
        emails = emails.filter(created_at__lte=before)
    return [
        TimelineEntry(
            at=email.created_at,
            kind="email",
            key=str(email.pk),
            title=email.subject or "(no subject)",
            status=email.status,
            detail=", ".join(email.recipients) or email.last_error or "",
            url=admin_change_url(email),
        )
        for email in emails.order_by("-created_at", "-id")[:limit]
    ]
