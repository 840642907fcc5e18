"""The hook point of event processing: automations register here to match waits and
start runs. Handlers run inside the batch's processing transaction, so their writes
commit exactly when the event becomes `processed`, and a handler that raises rolls back
its event's writes and makes the attempt fail (retry with backoff, then the dead-letter
queue). A batch first runs all its events in one savepoint; when one raises, that is
rolled back and the batch runs again with a savepoint per event, so a handler may be
called twice for one event in one attempt and only the second call's writes are kept.
Keep every effect in the database transaction (anything leaving it goes through
`transaction.on_commit`, which a rolled-back savepoint discards).

Later events of the same batch resolve their contacts through an index loaded when the
batch started (plus what identity resolution itself created or changed), so a handler
must not change a contact's email or external id, or delete it: the rest of its batch
would still resolve to the contact as it was."""

from typing import TYPE_CHECKING, Protocol

from config.hooks import Handlers

if TYPE_CHECKING:
    from contacts.models import Contact
    from events.models import Event


class EventHandler(Protocol):
    def __call__(self, *, event: "Event", contact: "Contact | None") -> None: ...


_handlers: Handlers[EventHandler] = Handlers()


def register_event_handler(handler: EventHandler | str) -> EventHandler | str:
    """Adds a handler (once; usable as a decorator): a callable, or the dotted path of one
    named in the registering app's apps.py, imported when the first batch runs."""
    return _handlers.register(handler)


def unregister_event_handler(handler: EventHandler | str) -> None:
    _handlers.unregister(handler)


def event_handlers() -> tuple[EventHandler, ...]:
    return _handlers.all()
