"""The process cache of what every request reads (key records, projects, plan terms): each
server process keeps a value `LOCAL_CACHE_SECONDS` (default 5), then reads the database
again. So a change, however it is made (the API, the console, SQL), is seen by every
process within `LOCAL_CACHE_SECONDS` of its commit, and by the process that made it
through the service at once (it forgets its own copy, again after the commit).

There is no shared level in front of the database: a value kept in a shared cache can be
written back stale by a reader that loaded it just before a change committed, after the
change cleared it, and would then outlive that bound by the shared entry's lifetime."""

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis
from django.core.cache import cache

from tenancy import conf

T = TypeVar("T")
logger = logging.getLogger(__name__)

_local: dict[str, tuple[float, Any]] = {}
# Entries are only replaced when read again, so a process that sees many keys or projects
# would keep every one it ever saw; past this many, expired entries are dropped.
LOCAL_MAX_ENTRIES = 10_000


def cached(name: str, load: Callable[[], T | None]) -> T | None:
    """The value under `name`: from this process, else `load()` (None is not cached, so a
    missing row is looked up again next time). Kept until `LOCAL_CACHE_SECONDS` after the
    load began, so never longer than that after a change that committed during the load."""
    now = time.monotonic()
    hit = _local.get(name)
    if hit is not None and hit[0] > now:
        kept: T = hit[1]
        return kept
    value = load()
    if value is None:
        return None
    ttl = conf.local_cache_seconds()
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
    """Drops `name` from this process."""
    _local.pop(name, None)


def forget_local() -> None:
    """Empties this process's cache (tests, and after bulk changes)."""
    _local.clear()


def is_cached(name: str) -> bool:
    """Whether this process holds a live value under `name`."""
    hit = _local.get(name)
    return hit is not None and hit[0] > time.monotonic()


def once_per(name: str, seconds: int) -> bool:
    """True at most once per `seconds` across all processes; most calls answer from memory.
    While the shared cache cannot be reached it answers for this process alone (True at
    most once per `seconds` here): what it guards is bookkeeping, never worth a failed
    request."""
    now = time.monotonic()
    hit = _local.get(name)
    if hit is not None and hit[0] > now:
        return False
    _store(name, now + seconds, True)
    try:
        return bool(cache.add(name, 1, seconds))
    except redis.RedisError:
        logger.warning("The shared cache cannot be reached; %s is decided in this process", name)
        return True
