"""A Redis client on the shared cache's server, for what needs more than get and set
(atomic scripts: the rate limiter, usage counters). The cache is Redis (or Valkey) in
every environment (config/settings/connections.py)."""

import redis
from django.conf import settings

# Every caller is on a request or a worker's hot path: a stalled server must cost a
# bounded wait, after which the caller fails open or retries later.
SOCKET_TIMEOUT_SECONDS = 1.0

_clients: dict[str, redis.Redis] = {}


def _location() -> str:
    location = settings.CACHES["default"]["LOCATION"]
    if isinstance(location, list | tuple):
        location = location[0]
    return str(location)


def redis_client() -> redis.Redis:
    """The process's client for the cache's Redis server (its pool reconnects after a
    fork)."""
    location = _location()
    client = _clients.get(location)
    if client is None:
        client = redis.Redis.from_url(
            location,
            socket_timeout=SOCKET_TIMEOUT_SECONDS,
            socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
        )
        _clients[location] = client
    return client
