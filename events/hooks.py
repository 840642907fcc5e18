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
would still resolve to the contact as it was.

A batch handler sees a batch's events together, for writes it makes once for many
events (one insert of the runs a batch starts): a new one is opened per batch, told the
batch's events by `begin` (to read what they all need at once: their contacts are not
resolved yet), `handle`d each event in the batch's order and `flush`ed at the end of the
batch's savepoint, whose rollback undoes the flush too. When the batch is redone event
by event, each event gets a handler of its own, begun with that event alone and flushed
inside the event's savepoint: the event's writes still stand or fall with it."""

from typing import TYPE_CHECKING, Protocol

from config.registries.hooks import Handlers

if TYPE_CHECKING:
    from contacts.models import Contact
    from events.models import Event


class EventHandler(Protocol):
    def __call__(self, *, event: "Event", contact: "Contact | None") -> None: ...


class EventBatchHandler(Protocol):
    def begin(self, *, events: "list[Event]") -> None: ...

    def handle(self, *, event: "Event", contact: "Contact | None") -> None: ...

    def flush(self) -> None: ...


class EventBatchHandlerFactory(Protocol):
    def __call__(self) -> EventBatchHandler: ...


_handlers: Handlers[EventHandler] = Handlers()
_batch_handlers: Handlers[EventBatchHandlerFactory] = Handlers()


def register_event_handler(handler: EventHandler | str) -> EventHandler | str:
    """Adds a handler (once; usable as a decorator): a callable, or the dotted path of one
    named in the registering app's apps.py, imported when the first batch runs."""
    return _handlers.register(handler)


def unregister_event_handler(handler: EventHandler | str) -> None:
    _handlers.unregister(handler)


def event_handlers() -> tuple[EventHandler, ...]:
    return _handlers.all()


def register_event_batch_handler(
    factory: EventBatchHandlerFactory | str,
) -> EventBatchHandlerFactory | str:
    """Adds a batch handler (once): what opens one, e.g. its class, or its dotted path."""
    return _batch_handlers.register(factory)


def unregister_event_batch_handler(factory: EventBatchHandlerFactory | str) -> None:
    _batch_handlers.unregister(factory)


def event_batch_handlers() -> tuple[EventBatchHandlerFactory, ...]:
    return _batch_handlers.all()
