"""The delivery policy of a project: frequency caps and quiet hours (docs/API.md,
Delivery policy).

Caps count `CappedSend` rows: one per message that counts, written in the message's own
transaction. A send first takes the contact's cap lock (a transaction-level advisory
lock keyed by the contact id), then reads its count: one index range read of
`capped_send_count_idx`, in a statement that starts after the lock is held, so it sees
every message a transaction that held the lock before committed. Two sends racing for a
contact's last slot therefore serialise on the lock and the second sees the first.
Callers that lock many contacts in one transaction (a batch of runs, a fan-out batch)
lock them all at once, in key order (`CapLedger.lock`), so two such transactions never
wait for each other in a cycle.

Quiet hours are a daily window of wall-clock times in the contact's time zone (its
field `timezone`, an IANA name, else the policy `default_timezone`): a send that falls
inside waits for the window's end (`quiet_until`). A window whose `end` is before its
`start` crosses midnight. An `end` that does not exist that day (the clocks jump over it)
ends the window at the jump; one that exists twice (the clocks go back) at its first
occurrence.
"""

import datetime as dt
import uuid
import zlib
import zoneinfo
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.db import connection

from config.api.durations import parse_duration
from config.db.copy import array_literal
from messaging.models import CappedSend
from tenancy.models import Project

# Advisory lock keys of cap locks: the first argument of the two-key form, so they never
# meet the keys other code takes with the one-key form.
CAP_LOCK_SPACE = 0x5CA9


@dataclass(frozen=True)
class Cap:
    """At most `max` messages of `channel` to one contact in any `per`."""

    channel: str
    max: int
    per: dt.timedelta


@dataclass(frozen=True)
class DeliveryPolicy:
    """A project's caps and quiet hours, parsed."""

    caps: tuple[Cap, ...] = ()
    quiet: tuple[dt.time, dt.time] | None = None
    zone: str = "UTC"

    def caps_of(self, channel: str) -> tuple[Cap, ...]:
        return tuple(cap for cap in self.caps if cap.channel == channel)

    def zone_of(self, fields: Mapping[str, Any] | None) -> zoneinfo.ZoneInfo:
        """The contact's time zone: its `timezone` field when that names one, else the
        project's."""
        named = (fields or {}).get("timezone")
        if isinstance(named, str) and named:
            found = _zone(named)
            if found is not None:
                return found
        return _zone(self.zone) or _zone("UTC")  # type: ignore[return-value]

    def quiet_until(self, at: dt.datetime, fields: Mapping[str, Any] | None) -> dt.datetime | None:
        """When the quiet hours that `at` falls in end, for a contact with `fields`; None
        when `at` is outside them (or there are none)."""
        if self.quiet is None:
            return None
        return quiet_end(at, self.zone_of(fields), *self.quiet)


NO_POLICY = DeliveryPolicy()


def policy_of(project: Project) -> DeliveryPolicy:
    """The project's delivery policy (its caps and window, as stored by PATCH /project)."""
    caps = tuple(
        Cap(channel=cap["channel"], max=int(cap["max"]), per=per)
        for cap in (project.frequency_caps or [])
        if (per := parse_duration(str(cap.get("per", "")))) is not None
    )
    window = project.quiet_hours
    quiet = None
    if window:
        quiet = (dt.time.fromisoformat(window["start"]), dt.time.fromisoformat(window["end"]))
    if not caps and quiet is None:
        return NO_POLICY
    return DeliveryPolicy(caps=caps, quiet=quiet, zone=project.default_timezone or "UTC")


@lru_cache(maxsize=512)
def _zone(name: str) -> zoneinfo.ZoneInfo | None:
    if name.startswith(("/", ".")) or ".." in name:
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _inside(local: dt.time, start: dt.time, end: dt.time) -> bool:
    if start < end:
        return start <= local < end
    return local >= start or local < end


def _instant(day: dt.date, wall: dt.time, zone: zoneinfo.ZoneInfo) -> dt.datetime:
    """The first instant the clocks of `zone` show `wall` on `day` or, when they skip it
    (a DST gap), the instant they jump over it."""
    first = dt.datetime.combine(day, wall, tzinfo=zone)  # fold 0: the first occurrence
    utc = first.astimezone(dt.UTC)
    if utc.astimezone(zone).replace(tzinfo=None) == first.replace(tzinfo=None):
        return utc
    # A gap: `wall` read with the offset after the jump lies before it, with the offset
    # before it after it; the jump is between, found to the second.
    low = first.replace(fold=1).astimezone(dt.UTC)
    high = utc
    before = low.astimezone(zone).utcoffset()
    while high - low > dt.timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(zone).utcoffset() == before:
            low = middle
        else:
            high = middle
    return high.replace(microsecond=0)


def quiet_end(
    at: dt.datetime, zone: zoneinfo.ZoneInfo, start: dt.time, end: dt.time
) -> dt.datetime | None:
    """The end of the quiet window [start, end) of `zone`'s wall clock that `at` falls in
    (UTC), or None when `at` is outside it."""
    local = at.astimezone(zone)
    wall = local.time().replace(tzinfo=None)
    if not _inside(wall, start, end):
        return None
    day = local.date()
    if start > end and wall >= start:
        day += dt.timedelta(days=1)  # the window goes on past midnight
    ends = _instant(day, end, zone)
    if ends <= at:
        # `at` is the second pass of a repeated hour (the clocks went back) whose first
        # pass already ended the window: the window is over.
        return None
    return ends


def _lock_key(contact_id: uuid.UUID) -> int:
    # A 31-bit key per contact (the two-key advisory lock takes two int4): two contacts
    # may share one, which only makes them wait for each other.
    return zlib.crc32(contact_id.bytes) & 0x7FFFFFFF


_TIMES_SQL = (
    "SELECT contact_id, array_agg(sent_at) FROM {table} "
    "WHERE contact_id = ANY(%s::uuid[]) AND channel = %s AND sent_at > %s GROUP BY contact_id"
)


@dataclass
class CapLedger:
    """The cap counts of one transaction: which contacts it has locked, and the messages
    it counted that are not written yet (`flush` writes them, `discard` forgets them)."""

    locked: set[int] = field(default_factory=set)
    pending: list[tuple[uuid.UUID, uuid.UUID, str, dt.datetime]] = field(default_factory=list)

    def lock(self, contact_ids: Iterable[uuid.UUID]) -> None:
        """Takes the cap locks of `contact_ids` not yet held, in key order, in one
        statement (held until the transaction ends)."""
        keys = sorted({_lock_key(each) for each in contact_ids} - self.locked)
        if not keys:
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_advisory_xact_lock(%s, k)) FROM "
                "(SELECT unnest(%s::int[]) AS k ORDER BY 1) AS keys",
                [CAP_LOCK_SPACE, "{" + ",".join(map(str, keys)) + "}"],
            )
        self.locked.update(keys)

    def room(
        self, *, policy: DeliveryPolicy, contact_id: uuid.UUID, channel: str, at: dt.datetime
    ) -> bool:
        """Whether one more message of `channel` to the contact at `at` stays within every
        cap (the contact's cap lock is taken first)."""
        return contact_id in self.room_many(
            policy=policy, contact_ids=[contact_id], channel=channel, at={contact_id: at}
        )

    def room_many(
        self,
        *,
        policy: DeliveryPolicy,
        contact_ids: list[uuid.UUID],
        channel: str,
        at: Mapping[uuid.UUID, dt.datetime],
    ) -> set[uuid.UUID]:
        """The contacts of `contact_ids` that one more message each (at `at[contact]`)
        keeps within every cap: their locks in one statement, their counted messages of
        the widest window in one index range read."""
        caps = policy.caps_of(channel)
        if not caps or not contact_ids:
            return set(contact_ids)
        self.lock(contact_ids)
        widest = max(cap.per for cap in caps)
        since = min(at[each] for each in contact_ids) - widest
        table = connection.ops.quote_name(CappedSend._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                _TIMES_SQL.format(table=table), [array_literal(contact_ids), channel, since]
            )
            stored: dict[uuid.UUID, list[dt.datetime]] = dict(cursor.fetchall())
        for _, contact, kind, sent in self.pending:
            if kind == channel and contact in at:
                stored.setdefault(contact, []).append(sent)
        room = set()
        for contact_id in contact_ids:
            times = stored.get(contact_id, [])
            moment = at[contact_id]
            # A message counts in every window it lies after the start of: one deferred
            # to a later time counts from now on.
            if all(sum(1 for t in times if t > moment - cap.per) < cap.max for cap in caps):
                room.add(contact_id)
        return room

    def count(
        self,
        *,
        policy: DeliveryPolicy,
        project_id: uuid.UUID,
        contact_id: uuid.UUID,
        channel: str,
        at: dt.datetime,
    ) -> None:
        """Counts a message of `channel` to the contact at `at` (written by `flush`); a
        channel without caps counts nothing."""
        if policy.caps_of(channel):
            self.pending.append((project_id, contact_id, channel, at))

    def flush(self) -> None:
        """Writes the counted messages, in the caller's transaction."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        table = connection.ops.quote_name(CappedSend._meta.db_table)
        projects, contacts, channels, times = zip(*pending, strict=True)
        with connection.cursor() as cursor:
            cursor.execute(
                # S608: the model's table name.
                f"INSERT INTO {table} (project_id, contact_id, channel, sent_at) "  # noqa: S608
                "SELECT * FROM unnest(%s::uuid[], %s::uuid[], %s::text[], %s::timestamptz[])",
                [list(projects), list(contacts), list(channels), list(times)],
            )

    def discard(self) -> None:
        """Forgets the counted messages not written (their transaction is undone; the
        locks go with it)."""
        self.pending = []


def policy_hold(
    *,
    policy: DeliveryPolicy,
    ledger: CapLedger,
    contacts: Iterable[tuple[uuid.UUID, Mapping[str, Any] | None]],
    channel: str,
    now: dt.datetime,
) -> tuple[dict[uuid.UUID, dt.datetime], set[uuid.UUID]]:
    """For one message each to many contacts (id, fields): when each goes (the end of
    its quiet hours, else `now`), and the contacts whose caps leave no room then (their
    locks and counts read in two statements for all)."""
    at = {pk: policy.quiet_until(now, fields) or now for pk, fields in contacts}
    if not policy.caps_of(channel):
        return at, set()
    room = ledger.room_many(policy=policy, contact_ids=list(at), channel=channel, at=at)
    return at, set(at) - room
