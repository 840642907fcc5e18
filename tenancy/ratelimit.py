"""Requests per second per API key: a sliding window in Redis, one script call (one round
trip) each time a process needs room.

The window is the current second's count plus the previous second's, weighted by how much
of it still lies within the last second (the sliding window counter of Cloudflare and
others: exact enough, two small keys per key and no per-request log). A refused request
is not counted, so a client that keeps retrying gets the limit's worth through each
second. The limit is the team's, else its plan's, else the API_RATE_LIMIT setting; 0 is
no limit.

A busy key would cost every request a round trip to Redis (on a loaded machine, most of
the limiter's price is that wait). So a process takes room for a few requests at once
(a lease: 1 % of the limit, at most LEASE_MAX, for the current second only) and spends it
locally. Room is only ever taken from the shared window, never assumed, so the limit
holds exactly across processes; what a process took and did not use in its second is
lost, so a key may meet 429 up to one lease per process early. Limits under 200 per
second lease one request at a time: every request asks Redis."""

import hashlib
import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
from django.http import HttpResponseBase

from config.runtime import clock
from config.runtime.redisclient import redis_client
from tenancy import conf
from tenancy.access import KeyRecord
from tenancy.errors import RateLimited
from tenancy.selectors import plan_terms_get

logger = logging.getLogger(__name__)

LEASE_FRACTION = 0.01
LEASE_MAX = 100

# KEYS: this second's counter, the previous second's. ARGV: limit, the previous second's
# weight, the requests wanted. Grants what fits, up to what was wanted. Returns
# {granted, current count, previous count}.
# How long a second's counter lives in Redis (real time): through the next second, whose
# sliding window still weighs it, and a little more.
WINDOW_KEY_MILLISECONDS = 2500
_WINDOW = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
local room = math.floor(tonumber(ARGV[1]) - previous * tonumber(ARGV[2]) - current)
local granted = math.min(tonumber(ARGV[3]), room)
if granted <= 0 then return {0, current, previous} end
current = redis.call('INCRBY', KEYS[1], granted)
if current == granted then redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4])) end
return {granted, current, previous}
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
        for name, value in self.headers():
            response[name] = value

    def headers(self) -> list[tuple[str, str]]:
        """The headers that tell the client, in the order `apply` sets them."""
        headers = [
            ("RateLimit-Limit", str(self.limit)),
            ("RateLimit-Remaining", str(self.remaining)),
            ("RateLimit-Reset", str(self.reset)),
        ]
        if not self.allowed:
            headers.append(("Retry-After", str(self.reset)))
        return headers


def rate_limit_for(key: KeyRecord) -> int:
    """Requests per second the key may make; 0 means no limit."""
    terms = plan_terms_get(team_id=key.team_id)
    if terms.rate_limit is not None:
        return terms.rate_limit
    return conf.api_rate_limit()


_warned_at = -math.inf
_SHA = hashlib.sha1(_WINDOW.encode()).hexdigest()  # noqa: S324 (Redis names scripts so)
_local = threading.local()


def _connection(client: redis.Redis) -> Any:
    """This thread's own connection to the limiter's server. Every request asks once, and
    redis-py's pool (taking and returning a connection) would cost as much CPU as the
    question itself. Made beside the pool, not by it: the pool counts what it makes
    against its cap (100) and never learns that a thread ended, so threads coming and
    going would use up the cap the usage meters share."""
    held = getattr(_local, "held", None)
    if held is not None and held[0] is client and held[1] == os.getpid():
        return held[2]
    pool = client.connection_pool
    connection = pool.connection_class(**pool.connection_kwargs)
    _local.held = (client, os.getpid(), connection)
    return connection


def _window(
    client: redis.Redis, keys: list[str], limit: int, weight: float, wanted: int
) -> list[int]:
    connection = _connection(client)
    try:
        args = (*keys, limit, weight, wanted, WINDOW_KEY_MILLISECONDS)
        connection.send_command("EVALSHA", _SHA, 2, *args)
        try:
            reply = connection.read_response()
        except redis.exceptions.NoScriptError:
            connection.send_command("EVAL", _WINDOW, 2, *args)
            reply = connection.read_response()
    except (redis.ConnectionError, redis.TimeoutError):
        # Connected again at the next request.
        connection.disconnect()
        raise
    return [int(value) for value in reply]


def _decision(
    allowed: bool, limit: int, current: int, previous: int, weight: float, leased: int = 0
) -> RateDecision:
    used = previous * weight + current
    return RateDecision(
        allowed=allowed,
        limit=limit,
        remaining=max(math.floor(limit - used), 0) + leased,
        reset=1,
    )


@dataclass(slots=True)
class _Lease:
    """Room this process took for a key in one second and has not spent yet."""

    second: int
    left: int
    # The window's room after the lease was taken (for RateLimit-Remaining).
    room: int


_leases: dict[str, _Lease] = {}
_leases_lock = threading.Lock()


def _spend_lease(key_id: str, second: int, limit: int) -> RateDecision | None:
    with _leases_lock:
        lease = _leases.get(key_id)
        if lease is None or lease.second != second or lease.left <= 0:
            return None
        lease.left -= 1
        return RateDecision(allowed=True, limit=limit, remaining=lease.room + lease.left, reset=1)


def _keep_lease(key_id: str, second: int, left: int, room: int) -> None:
    with _leases_lock:
        if len(_leases) > 10_000:
            _leases.clear()
        _leases[key_id] = _Lease(second=second, left=left, room=room)


def rate_limit_hit(key: KeyRecord) -> RateDecision | None:
    """Counts one request of `key`; None when the key has no limit (or the limiter is
    unreachable: requests then pass, and the failure is logged once a minute)."""
    limit = rate_limit_for(key)
    if limit <= 0:
        return None
    now = clock.now().timestamp()
    second = int(now)
    weight = 1.0 - (now - second)
    wanted = min(LEASE_MAX, max(1, int(limit * LEASE_FRACTION)))
    if wanted > 1:
        spent = _spend_lease(key.id, second, limit)
        if spent is not None:
            return spent
    try:
        granted, current, previous = _window(
            redis_client(),
            [f"rl:{key.id}:{second}", f"rl:{key.id}:{second - 1}"],
            limit,
            weight,
            wanted,
        )
    except redis.RedisError:
        global _warned_at
        if time.monotonic() - _warned_at > 60:
            _warned_at = time.monotonic()
            logger.warning("The rate limiter cannot reach Redis; requests pass unlimited")
        return None
    decision = _decision(granted > 0, limit, current, previous, weight, leased=max(granted - 1, 0))
    if granted > 1:
        _keep_lease(key.id, second, granted - 1, decision.remaining - (granted - 1))
    return decision


def rate_limit_enforce(key: KeyRecord) -> RateDecision | None:
    """Counts one request of `key` (after it authenticated) and raises RateLimited (429)
    over its limit; the decision gives every answer its RateLimit headers. The API views
    (ApiKeyAuthentication) and the MCP endpoint call it."""
    decision = rate_limit_hit(key)
    if decision is not None and not decision.allowed:
        raise RateLimited(
            details=f"This key may make {decision.limit} requests per second.",
            retry_after=decision.reset,
            decision=decision,
        )
    return decision
