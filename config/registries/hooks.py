"""Registries of handlers that one family offers and higher families fill, without either
importing the other's modules at start-up.

A higher family names its handler by dotted path in its `apps.py` (importing its services
there would load models before the app registry is ready); the registry imports it at
first use. Tests may register callables directly."""

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.utils.module_loading import import_string

H = TypeVar("H", bound=Callable[..., Any])


def dotted_path(handler: Callable[..., Any] | str) -> str:
    """The import path of a handler, so one given as a path and as a callable are equal."""
    if isinstance(handler, str):
        return handler
    return f"{handler.__module__}.{handler.__qualname__}"


def _same(one: Callable[..., Any] | str, other: Callable[..., Any] | str) -> bool:
    """Two callables are the same object; a path names the same as a path or a callable."""
    if not isinstance(one, str) and not isinstance(other, str):
        return one is other
    return dotted_path(one) == dotted_path(other)


class Handlers(Generic[H]):
    """An ordered set of handlers, each registered once, given as callables or paths."""

    def __init__(self) -> None:
        self._entries: list[H | str] = []
        self._imported: dict[str, H] = {}

    def register(self, handler: H | str) -> H | str:
        if not any(_same(entry, handler) for entry in self._entries):
            self._entries.append(handler)
        return handler

    def unregister(self, handler: H | str) -> None:
        self._entries = [entry for entry in self._entries if not _same(entry, handler)]

    def all(self) -> tuple[H, ...]:
        return tuple(self._imported_handler(entry) for entry in self._entries)

    def _imported_handler(self, entry: H | str) -> H:
        if not isinstance(entry, str):
            return entry
        if entry not in self._imported:
            self._imported[entry] = import_string(entry)
        return self._imported[entry]


class ByPath:
    """A callable named by dotted path and imported at its first call: how an app's
    apps.py connects a library's signal (django-anymail's `tracking`) to a module that
    loads models, before the app registry is ready. Connect it with `weak=False`: nothing
    else holds it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._handler: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._handler is None:
            self._handler = import_string(self.path)
        return self._handler(*args, **kwargs)

    def __repr__(self) -> str:
        return f"ByPath({self.path!r})"
