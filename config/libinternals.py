"""Every place the code reaches past a library's public names, each kept because it pays
(docs/PERFORMANCE.md, "Library internals") or because no public way exists, and each
checked by tests/config/test_libinternals.py: a test fails when the library moves what
is used here (an attribute gone, a signature changed) or when a swap no longer takes
effect. Nothing else in the code uses a library's private parts.

- httpx takes no network backend: its transport's connection pool is replaced.
- A request posted straight into that pool raises httpx's errors through httpx's own
  mapping of httpcore's.
- The HPACK encoder of an HTTP/2 connection (httpcore -> h2) changes class once the
  connection exists.
- Django model instances are made without `Model.__init__`: their `_state` is built here,
  and a foreign key's related instance is cached where `select_related` puts it.
- A Django signal's connected receivers are read by their lookup keys (the lean path calls
  the request signals' own receivers directly while they are the only ones).
- A `path()` pattern's route is read as given, to tell a plain text from a translated one
  (config/api/routes.py reads only the URLconf's untranslated routes).
"""

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import hpack
import httpcore
import httpx
from django.db import models
from django.db.models.base import ModelState
from django.dispatch import Signal
from django.urls.resolvers import RoutePattern
from django.utils.connection import BaseConnectionHandler
from httpx._transports.default import map_httpcore_exceptions

M = TypeVar("M", bound=models.Model)
E = TypeVar("E", bound=hpack.Encoder)
T = TypeVar("T")

# --- httpx and httpcore ---


def transport_over(pool: httpcore.ConnectionPool, **options: Any) -> httpx.HTTPTransport:
    """An httpx transport made with `options` whose requests go through `pool` (one built
    with a network backend of the caller's, which httpx does not take)."""
    transport = httpx.HTTPTransport(**options)
    transport._pool = pool
    return transport


def httpx_errors() -> AbstractContextManager[None]:
    """Turns httpcore's exceptions raised inside into httpx's, as httpx's transport does:
    for requests sent straight into a pool."""
    return map_httpcore_exceptions()


def h2_encoders(pool: httpcore.ConnectionPool) -> Iterator[hpack.Encoder]:
    """The HPACK encoders of the pool's HTTP/2 connections (a connection of another shape,
    or one not yet made, has none)."""
    for connection in pool.connections:
        state = getattr(getattr(connection, "_connection", None), "_h2_state", None)
        encoder = getattr(state, "encoder", None)
        if isinstance(encoder, hpack.Encoder):
            yield encoder


def encoders_retype(
    pool: httpcore.ConnectionPool, kind: type[E], configure: Callable[[E], None]
) -> None:
    """Makes every plain `hpack.Encoder` of the pool's HTTP/2 connections a `kind` (a
    subclass without state of its own, then `configure`d), keeping its table: both sides'
    tables stay in step. httpcore makes a connection inside its first request and offers
    no hook before, so the class is changed afterwards."""
    for encoder in h2_encoders(pool):
        if type(encoder) is hpack.Encoder:
            encoder.__class__ = kind
            configure(encoder)  # type: ignore[arg-type]  # now a `kind`


# --- Django ---


def instance_blank(model: type[M], *, db: str | None = None) -> M:
    """An instance of `model` with no field set and no `__init__` run: new (`adding`)
    without `db`, else as read from database `db`. The caller fills its `__dict__` with
    every concrete field's attname, as `__init__` or `from_db` would."""
    instance = model.__new__(model)
    state = ModelState()
    if db is not None:
        state.adding = False
        state.db = db
    instance._state = state
    return instance


def related_cache(instance: models.Model) -> dict[str, Any]:
    """Where a foreign key's related instance is cached by field name (what
    `select_related` fills and the field's descriptor reads first)."""
    cache: dict[str, Any] = instance._state.fields_cache
    return cache


def receiver_keys(signal: Signal) -> tuple[tuple[int, int], ...]:
    """The lookup keys of `signal`'s connected receivers, in the order it calls them: each
    `(id(receiver), id(sender))`, the sender `None` for a receiver of every sender."""
    # A list made first: a generator costs a resumption per receiver, on every request.
    return tuple([entry[0] for entry in signal.receivers])


def route_untranslated(pattern: RoutePattern) -> bool:
    """Whether a `path()` pattern's route is a plain string, its regular expression the same
    in every language, rather than a lazily translated one (`gettext_lazy`)."""
    return isinstance(pattern._route, str)  # type: ignore[attr-defined]


def connections_opened(handler: "BaseConnectionHandler[T]") -> list[T]:
    """What `handler.all(initialized_only=True)` returns (this thread's connections that
    were made, in the settings' order), reading the thread's store once per alias where
    `all` reads it twice; each read of that store costs more than the work done with it."""
    store = handler._connections  # type: ignore[attr-defined]
    found = []
    for alias in handler.settings:
        made = getattr(store, alias, None)
        if made is not None:
            found.append(made)
    return found
