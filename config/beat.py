"""One active Celery beat among any number: the scheduler sends periodic tasks only while
its process holds a lease in the broker's Redis, so every host may run beat and one
schedules at a time (docs/ARCHITECTURE.md, "One active beat").

The lease is one key whose value is the holder's token, with an expiry of
`BEAT_LEASE_SECONDS`. The active process renews it (compare and extend) before every task
it sends and at least every third of the lease; a standby asks again when the key's time
is up; a process that stops cleanly deletes it (compare and delete), so a standby takes
over at its next tick.

The broker's Redis, not the cache's: a Celery broker must run without eviction (an evicted
queue loses its tasks), while a cache may rightly evict, and an evicted lease would make
two beats active. Beat also does nothing useful while the broker is down, so the lease
costs no availability of its own.
"""

import logging
import os
import secrets
import socket
from typing import Any

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django_celery_beat.schedulers import DatabaseScheduler

from config.runtime.redisclient import broker_redis_client

logger = logging.getLogger(__name__)

LEASE_KEY = "sendrealm:beat:lease"

# KEYS: the lease. ARGV: token, milliseconds. Taken (or already ours: extended): -1; held
# by another: the milliseconds it has left, at least 1 (PTTL says 0 in its last
# millisecond, when the key still exists), or a whole lease for a key without expiry.
_ACQUIRE = """
local holder = redis.call('GET', KEYS[1])
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return -1
end
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return -1
end
local left = redis.call('PTTL', KEYS[1])
if left == -1 then
  return tonumber(ARGV[2])
end
return math.max(left, 1)
"""

# KEYS: the lease. ARGV: token, milliseconds. 1 when extended, 0 when not ours any more.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

# KEYS: the lease. ARGV: token. 1 when deleted, 0 when not ours.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class Lease:
    """A lease on one Redis key, held by at most one token at a time: taken when the key
    is free, renewed and released only by the token that holds it. The token names the
    host and process (`GET sendrealm:beat:lease` says which beat is active)."""

    def __init__(self, client: redis.Redis, key: str, seconds: float) -> None:
        if seconds <= 0:
            raise ImproperlyConfigured("BEAT_LEASE_SECONDS must be above 0.")
        self.client = client
        self.key = key
        self.seconds = seconds
        self.milliseconds = max(1, round(seconds * 1000))
        self.token = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(8)}"
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    def acquire(self) -> float:
        """Takes the lease if it is free (or extends it if it is ours): 0. Otherwise the
        seconds the holder's lease has left, when a standby should ask again."""
        left = int(self._acquire(keys=[self.key], args=[self.token, self.milliseconds]))
        return left / 1000 if left > 0 else 0.0

    def renew(self) -> bool:
        """Extends the lease by its whole length if this token still holds it."""
        return bool(self._renew(keys=[self.key], args=[self.token, self.milliseconds]))

    def release(self) -> bool:
        """Gives the lease up if this token holds it (a standby takes it at its next tick)."""
        return bool(self._release(keys=[self.key], args=[self.token]))

    def holder(self) -> str | None:
        """The token that holds the lease now, if any."""
        value = self.client.get(self.key)
        return value.decode() if isinstance(value, bytes) else None


class Role:
    STARTING = "starting"
    ACTIVE = "active"
    STANDBY = "standby"


class LeasedScheduler(DatabaseScheduler):  # type: ignore[misc]  # Celery ships no types
    """django-celery-beat's database scheduler, scheduling only while this process holds
    the beat lease (`CELERY_BEAT_SCHEDULER`).

    Each `tick` sends at most one due task (Celery's own loop); it begins by renewing the
    lease, and renews it again just before the send: a process that could not renew it
    (taken over, or Redis out of reach) sends nothing more and stands by. Ticks are at
    most a third of the lease apart. On taking the lease the schedule is read again from
    the database, so each entry's `last_run_at` is the one the previous holder recorded;
    every send records its entry's at once (`sync_every_tasks=1`), and only the holder
    writes them."""

    max_interval: float

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Set before the base class reads the schedule, which calls `sync` and
        # `all_as_schedule`.
        self.role = Role.STARTING
        # Whether the schedule in memory was read from the database while this process
        # held the lease; until it is, its `last_run_at`s may be older than the
        # database's and are neither used nor written.
        self.read_while_active = False
        self.entries: dict[str, Any] = {}
        self.lease = Lease(broker_redis_client(), LEASE_KEY, float(settings.BEAT_LEASE_SECONDS))
        super().__init__(*args, sync_every_tasks=1, **kwargs)
        self.max_interval = min(float(self.max_interval), self.lease.seconds / 3)

    @property
    def active(self) -> bool:
        return self.role == Role.ACTIVE

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if self.active:
            if not self._renewed():
                return float(self.max_interval)
        else:
            wait = self._acquired()
            if wait:
                return min(wait, float(self.max_interval))
        return float(super().tick(*args, **kwargs))

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        # Renewed again just before the publish: a tick may have spent time reading the
        # schedule since it renewed, and a lease that ran out meanwhile sends nothing.
        if self._renewed():
            super().apply_entry(entry, producer=producer)

    def _renewed(self) -> bool:
        try:
            renewed = self.lease.renew()
        except redis.RedisError as error:
            self._stand_by(f"could not renew the beat lease ({error})")
            return False
        if not renewed:
            self._stand_by("lost the beat lease to another process")
        return renewed

    def _acquired(self) -> float:
        """0 once this process holds the lease, else the seconds to wait before asking
        again."""
        try:
            wait = self.lease.acquire()
        except redis.RedisError as error:
            self._stand_by(f"could not reach Redis for the beat lease ({error})", trouble=True)
            return float(self.max_interval)
        if wait:
            self._stand_by("another process holds the beat lease")
            return wait
        self.role = Role.ACTIVE
        self.read_while_active = False
        self.setup_schedule()
        logger.info(
            "beat: active, scheduling periodic tasks (lease %s, %ss)",
            self.lease.token,
            self.lease.seconds,
        )
        return 0.0

    def _stand_by(self, reason: str, *, trouble: bool = False) -> None:
        """Logged once per change: a lost lease or an unreachable Redis as a warning."""
        if self.role == Role.STANDBY:
            return
        lost = self.active
        self.role = Role.STANDBY
        self.read_while_active = False
        if lost:
            logger.warning("beat: standing by, sending nothing: %s", reason)
        elif trouble:
            logger.warning("beat: standing by: %s", reason)
        else:
            logger.info("beat: standing by: %s", reason)

    # django-celery-beat's hooks: its `schedule` property reads the whole schedule again
    # when `schedule_changed` says so, after a `sync` of the entries sent since the last.

    def setup_schedule(self) -> None:
        # Writes `beat_schedule`'s entries to the database (`update_or_create` each): only
        # the holder does, on taking the lease. Beats starting together all did, and the
        # one that lost a race to add an entry logged an error; a standby writes nothing.
        if self.active:
            super().setup_schedule()

    def schedule_changed(self) -> bool:
        changed = bool(super().schedule_changed())
        return changed or (self.active and not self.read_while_active)

    def all_as_schedule(self) -> dict[str, Any]:
        schedule: dict[str, Any] = super().all_as_schedule()
        self.read_while_active = self.active
        self.entries = schedule  # the dict the base class keeps as its schedule
        return schedule

    def reserve(self, entry: Any) -> Any:
        # django-celery-beat leaves the entry it read in its schedule, with the run before
        # this one: a heap rebuilt from that schedule without reading the database (after
        # two changes close together, such as another beat writing the entries as it
        # starts) would send the task again at once. The schedule keeps the new run.
        new_entry = super().reserve(entry)
        if new_entry.name in self.entries:
            self.entries[new_entry.name] = new_entry
        return new_entry

    def sync(self) -> None:
        if self.active and self.read_while_active:
            super().sync()

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.active:
                self.role = Role.STANDBY
                try:
                    released = self.lease.release()
                except redis.RedisError as error:
                    logger.warning("beat: could not release the beat lease: %s", error)
                else:
                    if released:
                        logger.info("beat: stopped, beat lease released")
