"""Requests per second per API key: a sliding window in Redis, one script call a request.

The window is the current second's count plus the previous second's, weighted by how much
of it still lies within the last second (the sliding window counter of Cloudflare and
others: exact enough, two small keys per key and no per-request log). A refused request
is not counted, so a client that keeps retrying gets the limit's worth through each
second. The limit is the team's, else its plan's, else the API_RATE_LIMIT setting; 0 is
no limit. Without Redis (the embedded default) the window is kept per process."""

import hashlib
import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.http import HttpResponseBase

from config import clock
from config.redisclient import redis_client
from tenancy.access import KeyRecord
from tenancy.selectors import plan_terms_get

logger = logging.getLogger(__name__)

# KEYS: this second's counter, the previous second's. ARGV: limit, the previous second's
# weight. Returns {allowed, current count, previous count}.
_WINDOW = """
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], 2500) end
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
if previous * tonumber(ARGV[2]) + current > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return {0, current - 1, previous}
end
return {1, current, previous}
"""


@dataclass(frozen=True, slots=True)
class RateDecision:
    """What the limiter said about one request, and the headers that tell the client."""

    allowed: bool
    limit: int
    remaining: int
    # Seconds until the window has room again (RateLimit-Reset, Retry-After).
    reset: int

    def apply(self, response: HttpResponseBase) -> None:
        response["RateLimit-Limit"] = str(self.limit)
        response["RateLimit-Remaining"] = str(self.remaining)
        response["RateLimit-Reset"] = str(self.reset)
        if not self.allowed:
            response["Retry-After"] = str(self.reset)


def rate_limit_for(key: KeyRecord) -> int:
    """Requests per second the key may make; 0 means no limit."""
    terms = plan_terms_get(team_id=key.team_id)
    if terms.rate_limit is not None:
        return terms.rate_limit
    return int(getattr(settings, "API_RATE_LIMIT", 1000))


_warned_at = -math.inf
_SHA = hashlib.sha1(_WINDOW.encode()).hexdigest()  # noqa: S324 (Redis names scripts so)
_local = threading.local()


def _connection(client: redis.Redis) -> Any:
    """This thread's own connection to the limiter's server. Every request asks once, and
    redis-py's pool (taking and returning a connection) would cost as much CPU as the
    question itself."""
    held = getattr(_local, "held", None)
    if held is not None and held[0] is client and held[1] == os.getpid():
        return held[2]
    connection = client.connection_pool.make_connection()
    _local.held = (client, os.getpid(), connection)
    return connection


def _window(client: redis.Redis, keys: list[str], limit: int, weight: float) -> list[int]:
    connection = _connection(client)
    try:
        connection.send_command("EVALSHA", _SHA, 2, *keys, limit, weight)
        try:
            reply = connection.read_response()
        except redis.exceptions.NoScriptError:
            connection.send_command("EVAL", _WINDOW, 2, *keys, limit, weight)
            reply = connection.read_response()
    except (redis.ConnectionError, redis.TimeoutError):
        # Connected again at the next request.
        connection.disconnect()
        raise
    return [int(value) for value in reply]


def _decision(
    allowed: bool, limit: int, current: int, previous: int, weight: float
) -> RateDecision:
    used = previous * weight + current
    return RateDecision(
        allowed=allowed,
        limit=limit,
        remaining=max(math.floor(limit - used), 0),
        reset=1,
    )


def rate_limit_hit(key: KeyRecord) -> RateDecision | None:
    """Counts one request of `key`; None when the key has no limit (or the limiter is
    unreachable: requests then pass, and the failure is logged once a minute)."""
    limit = rate_limit_for(key)
    if limit <= 0:
        return None
    now = clock.now().timestamp()
    second = int(now)
    weight = 1.0 - (now - second)
    client = redis_client()
    if client is None:
        return _local_hit(key.id, limit, second, weight)
    try:
        allowed, current, previous = _window(
            client, [f"rl:{key.id}:{second}", f"rl:{key.id}:{second - 1}"], limit, weight
        )
    except redis.RedisError:
        global _warned_at
        if time.monotonic() - _warned_at > 60:
            _warned_at = time.monotonic()
            logger.warning("The rate limiter cannot reach Redis; requests pass unlimited")
        return None
    return _decision(bool(allowed), limit, int(current), int(previous), weight)


_local_lock = threading.Lock()
_local_counts: dict[tuple[str, int], int] = {}


def _local_hit(key_id: str, limit: int, second: int, weight: float) -> RateDecision:
    with _local_lock:
        if len(_local_counts) > 10_000:
            for stale in [k for k in _local_counts if k[1] < second - 1]:
                del _local_counts[stale]
        current = _local_counts.get((key_id, second), 0) + 1
        previous = _local_counts.get((key_id, second - 1), 0)
        allowed = previous * weight + current <= limit
        if allowed:
            _local_counts[(key_id, second)] = current
        else:
            current -= 1
    return _decision(allowed, limit, current, previous, weight)
