"""The hook points of contacts: families that keep rows about a contact (audiences now;
messaging and automations later) react here to what happens to it, so contacts never
imports them. A family registers its handler by dotted path in its apps.py.

Handlers run inside the change's transaction with the contact's row locked: their writes
commit exactly when the change does, and a handler that raises rolls the change back."""

from typing import TYPE_CHECKING, Protocol

from config.hooks import Handlers

if TYPE_CHECKING:
    from contacts.models import Contact


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
