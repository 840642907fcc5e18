"""A Redis client on the shared cache's server, for what needs more than get and set
(atomic scripts: the rate limiter, usage counters). None when the cache is not Redis (the
embedded default keeps its cache in process memory); callers then fall back."""

from typing import Any

import redis
from django.conf import settings

# Every caller is on a request or a worker's hot path: a stalled server must cost a
# bounded wait, after which the caller fails open or retries later.
SOCKET_TIMEOUT_SECONDS = 1.0

_clients: dict[str, redis.Redis] = {}


def _location() -> str | None:
    cache: dict[str, Any] = settings.CACHES.get("default", {})
    if not str(cache.get("BACKEND", "")).endswith("RedisCache"):
        return None
    location = cache.get("LOCATION")
    if isinstance(location, list | tuple):
        location = location[0] if location else None
    return str(location) if location else None


def redis_client() -> redis.Redis | None:
    """The process's client for the cache's Redis server (its pool reconnects after a
    fork), or None when the cache is not Redis."""
    location = _location()
    if location is None:
        return None
    client = _clients.get(location)
    if client is None:
        client = redis.Redis.from_url(
            location,
            socket_timeout=SOCKET_TIMEOUT_SECONDS,
            socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
        )
        _clients[location] = client
    return client
