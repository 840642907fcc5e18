"""Two-level cache for what every request reads: a few seconds in the process, a minute in
the shared cache. The process level saves the shared cache's round trips on the hot path;
its short life bounds how long another server process can act on a changed record."""

import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache

T = TypeVar("T")

_local: dict[str, tuple[float, Any]] = {}
# Entries are only replaced when read again, so a process that sees many keys or projects
# would keep every one it ever saw; past this many, expired entries are dropped.
LOCAL_MAX_ENTRIES = 10_000


def local_seconds() -> float:
    return float(getattr(settings, "LOCAL_CACHE_SECONDS", 5))


def cached(name: str, load: Callable[[], T | None], *, shared_seconds: int) -> T | None:
    """The value under `name`: from this process, the shared cache, or `load()` (None is
    not cached, so a missing row is looked up again next time)."""
    now = time.monotonic()
    hit = _local.get(name)
    if hit is not None and hit[0] > now:
        return hit[1]
    value: T | None = cache.get(name)
    if value is None:
        value = load()
        if value is None:
            return None
        cache.set(name, value, shared_seconds)
    ttl = local_seconds()
    if ttl > 0:
        _store(name, now + ttl, value)
    return value


def _store(name: str, expires: float, value: Any) -> None:
    if len(_local) >= LOCAL_MAX_ENTRIES:
        now = time.monotonic()
        for stale in [key for key, (until, _) in _local.items() if until <= now]:
            _local.pop(stale, None)
        if len(_local) >= LOCAL_MAX_ENTRIES:
            _local.clear()
    _local[name] = (expires, value)


def forget(name: str) -> None:
    """Drops `name` from this process and from the shared cache."""
    _local.pop(name, None)
    cache.delete(name)


def forget_local() -> None:
    """Empties this process's level (tests, and after bulk changes)."""
    _local.clear()


def once_per(name: str, seconds: int) -> bool:
    """True at most once per `seconds` across all processes; most calls answer from memory."""
    now = time.monotonic()
    hit = _local.get(name)
    if hit is not None and hit[0] > now:
        return False
    _store(name, now + seconds, True)
    return bool(cache.add(name, 1, seconds))
