"""A contact's timeline for the staff console: what every family recorded about the
person (events, runs and their steps, emails, pushes, subscription and membership
changes), newest first, a page at a time. Each family contributes through
`contacts.hooks.register_timeline_source`; contacts knows none of them."""

import datetime as dt
from dataclasses import dataclass

from django.db.models import Model
from django.urls import NoReverseMatch, reverse

from contacts.hooks import timeline_sources
from contacts.models import Contact

PAGE_SIZE = 25


@dataclass(frozen=True)
class TimelineAction:
    """A button on an entry: a POST to `url` (a console page that checks permissions)."""

    label: str
    url: str


@dataclass(frozen=True)
class TimelineEntry:
    at: dt.datetime
    kind: str
    # Unique within its kind (the row's id): with `at` and `kind`, the paging cursor.
    key: str
    title: str
    status: str = ""
    detail: str = ""
    url: str | None = None
    children: tuple["TimelineEntry", ...] = ()
    actions: tuple[TimelineAction, ...] = ()

    @property
    def cursor(self) -> tuple[dt.datetime, str, str]:
        return (self.at, self.kind, self.key)


@dataclass(frozen=True)
class TimelinePage:
    entries: list[TimelineEntry]
    # Where the next (older) page starts; None on the last page.
    next_before: dt.datetime | None
    next_key: str | None


def contact_timeline(
    *,
    contact: Contact,
    user: object,
    before: dt.datetime | None = None,
    before_key: str | None = None,
    limit: int = PAGE_SIZE,
) -> TimelinePage:
    """One page of the contact's timeline, newest first. Every source runs a fixed
    number of queries, so a page costs the same whatever the contact's history."""
    entries: list[TimelineEntry] = []
    for source in timeline_sources():
        entries.extend(source(contact=contact, before=before, limit=limit + 1, user=user))
    if before is not None and before_key is not None:
        kind, _, key = before_key.partition(":")
        cursor = (before, kind, key)
        entries = [entry for entry in entries if entry.cursor < cursor]
    entries.sort(key=lambda entry: entry.cursor, reverse=True)
    page, rest = entries[:limit], entries[limit:]
    if not rest or not page:
        return TimelinePage(entries=page, next_before=None, next_key=None)
    last = page[-1]
    return TimelinePage(entries=page, next_before=last.at, next_key=f"{last.kind}:{last.key}")


def admin_change_url(obj: Model) -> str | None:
    """The console page of a row, when its model has one."""
    meta = obj._meta
    try:
        return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
    except NoReverseMatch:
        return None
