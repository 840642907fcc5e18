"""The hook points of contacts: families that keep rows about a contact (audiences now;
messaging and automations later) react here to what happens to it, so contacts never
imports them. A family registers its handler by dotted path in its apps.py.

Handlers run inside the change's transaction with the contact's row locked: their writes
commit exactly when the change does, and a handler that raises rolls the change back."""

from typing import TYPE_CHECKING, Any, Protocol

from config.registries.hooks import Handlers

if TYPE_CHECKING:
    import datetime as dt

    from contacts.models import Contact
    from contacts.timeline import TimelineEntry


class ContactDeletedHandler(Protocol):
    def __call__(self, *, contact: "Contact") -> object: ...


_deleted_handlers: Handlers[ContactDeletedHandler] = Handlers()


def register_contact_deleted_handler(
    handler: ContactDeletedHandler | str,
) -> ContactDeletedHandler | str:
    """Adds a handler called with the soft-deleted contact (once; usable as a decorator):
    a callable, or the dotted path of one, imported when a contact is first deleted."""
    return _deleted_handlers.register(handler)


def unregister_contact_deleted_handler(handler: ContactDeletedHandler | str) -> None:
    _deleted_handlers.unregister(handler)


def contact_deleted_handlers() -> tuple[ContactDeletedHandler, ...]:
    return _deleted_handlers.all()


# --- the contact's timeline in the staff console -----------------------------------------


class TimelineSource(Protocol):
    def __call__(
        self, *, contact: "Contact", before: "dt.datetime | None", limit: int, user: Any
    ) -> "list[TimelineEntry]":
        """At most `limit` entries about the contact at or before `before` (None: now),
        newest first, in a fixed number of queries; `user` decides which actions show."""
        ...


_timeline_sources: Handlers[TimelineSource] = Handlers()


def register_timeline_source(source: TimelineSource | str) -> TimelineSource | str:
    """Adds what a family contributes to a contact's timeline in the staff console
    (events, emails, pushes, runs, subscriptions, memberships), by callable or path."""
    return _timeline_sources.register(source)


def unregister_timeline_source(source: TimelineSource | str) -> None:
    _timeline_sources.unregister(source)


def timeline_sources() -> tuple[TimelineSource, ...]:
    return _timeline_sources.all()
