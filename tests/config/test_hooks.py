"""Handler registries: a handler named by path is imported at first use and counts as the
same handler as its callable."""

from django.dispatch import Signal

from config.registries.hooks import ByPath, Handlers
from config.registries.outbox import system_event_emit


def first(**kwargs: object) -> str:
    return "first"


def test_a_handler_named_by_path_is_imported_at_first_use_and_registered_once():
    handlers: Handlers = Handlers()
    handlers.register("tests.config.test_hooks.first")
    handlers.register(first)
    handlers.register("config.registries.outbox.system_event_emit")

    assert handlers.all() == (first, system_event_emit)


def test_unregistering_a_callable_removes_its_path_too():
    handlers: Handlers = Handlers()
    handlers.register("tests.config.test_hooks.first")
    handlers.unregister(first)

    assert handlers.all() == ()


def test_two_closures_of_one_name_are_two_handlers():
    def make() -> object:
        def handler() -> None:
            return None

        return handler

    one, two = make(), make()
    handlers: Handlers = Handlers()
    handlers.register(one)
    handlers.register(two)

    assert handlers.all() == (one, two)


def test_a_receiver_named_by_path_is_imported_at_its_first_call():
    signal = Signal()
    receiver = ByPath("tests.config.test_hooks.first")
    signal.connect(receiver, weak=False)

    assert signal.send(sender=None) == [(receiver, "first")]
