"""The hook points of contacts: families that keep rows about a contact (audiences now;
messaging and automations later) react here to what happens to it, so contacts never
imports them. Register from the family's AppConfig.ready().

Handlers run inside the change's transaction with the contact's row locked: their writes
commit exactly when the change does, and a handler that raises rolls the change back."""

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from contacts.models import Contact


class ContactDeletedHandler(Protocol):
    def __call__(self, *, contact: "Contact") -> object: ...


_deleted_handlers: list[ContactDeletedHandler] = []


def register_contact_deleted_handler(handler: ContactDeletedHandler) -> ContactDeletedHandler:
    """Adds a handler called with the soft-deleted contact (once; usable as a decorator)."""
    if handler not in _deleted_handlers:
        _deleted_handlers.append(handler)
    return handler


def unregister_contact_deleted_handler(handler: ContactDeletedHandler) -> None:
    if handler in _deleted_handlers:
        _deleted_handlers.remove(handler)


def contact_deleted_handlers() -> tuple[ContactDeletedHandler, ...]:
    return tuple(_deleted_handlers)
