"""Redis clients for what needs more than get and set: on the shared cache's server (atomic
scripts: the rate limiter, usage counters) and on the broker's (the beat lease, which must
never be evicted). Both are Redis (or Valkey) in every environment
(config/settings/connections.py)."""

from typing import Any

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

# Every caller is on a request or a worker's hot path: a stalled server must cost a
# bounded wait, after which the caller fails open or retries later.
SOCKET_TIMEOUT_SECONDS = 1.0

# By server role and URL: the cache's and the broker's clients differ in their retries even
# where both name one server.
_clients: dict[tuple[str, str], redis.Redis] = {}


def _location() -> str:
    location = settings.CACHES["default"]["LOCATION"]
    if isinstance(location, list | tuple):
        location = location[0]
    return str(location)


def _client_for(role: str, url: str, **options: Any) -> redis.Redis:
    client = _clients.get((role, url))
    if client is None:
        client = redis.Redis.from_url(
            url,
            socket_timeout=SOCKET_TIMEOUT_SECONDS,
            socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
            **options,
        )
        _clients[role, url] = client
    return client


def redis_client() -> redis.Redis:
    """The process's client for the cache's Redis server (its pool reconnects after a
    fork)."""
    return _client_for("cache", _location())


def broker_redis_client() -> redis.Redis:
    """The process's client for the Celery broker's Redis server: for state that must
    outlive memory pressure (the broker's server evicts nothing, or it would lose tasks),
    where the cache's server may evict. One retry, at once: its callers (beat's lease)
    would rather give up within a couple of timeouts and ask again at their next turn
    than wait through redis-py's ten retries with backoff."""
    return _client_for("broker", str(settings.CELERY_BROKER_URL), retry=Retry(NoBackoff(), 1))
