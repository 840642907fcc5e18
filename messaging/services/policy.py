"""The delivery policy of a project: frequency caps and quiet hours (docs/API.md,
Delivery policy).

Caps count the messages kept on the contact's `ContactSends` row: per channel, the
send times its caps can still count. A send first locks and reads the row (`SELECT ...
FOR UPDATE`, which waits while another transaction holds it and then answers what that
one committed; the contact's first capped send makes the row), then adds its own time
before its transaction commits. Two sends racing for a
contact's last slot therefore serialise on the row and the second sees the first. A
transaction that sends to many contacts (a batch of runs) locks and reads all their rows
in one statement, in key order (`CapLedger.lock`), so two such transactions never wait
for each other in a cycle, and each of its sends then costs no query; a fan-out batch
checks and counts all its contacts in one statement, in key order too
(messaging/services/policy_batch.py). Row locks live in the rows, not in PostgreSQL's
shared lock table, so a batch of thousands of contacts takes none of its slots.

Quiet hours are a daily window of wall-clock times in the contact's time zone (its
field `timezone`, an IANA name, else the policy `default_timezone`): a send that falls
inside waits for the window's end (`quiet_until`). A window whose `end` is before its
`start` crosses midnight. An `end` that does not exist that day (the clocks jump over it)
ends the window at the jump; one that exists twice (the clocks go back) at its first
occurrence.
"""

import datetime as dt
import uuid
import zoneinfo
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.db import connection

from config.api.durations import parse_duration
from config.db.bulk import rows_fetch
from config.runtime import clock
from messaging.models import ContactSends
from tenancy.models import Project

UTC_ZONE = zoneinfo.ZoneInfo("UTC")


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
        return _zone(self.zone) or UTC_ZONE

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


# Locks in key order (the sort runs below the lock) and answers each row's latest
# committed state, waiting for a transaction that holds one.
_LOCK_SQL = (
    "SELECT contact_id, email, push FROM {table} WHERE contact_id = ANY(%b) "
    "ORDER BY contact_id FOR UPDATE"
)
# A contact's first capped send makes its row (locked, uncommitted, by this transaction).
_MAKE_SQL = (
    "INSERT INTO {table} (contact_id, email, push) "
    "SELECT c, '{{}}', '{{}}' FROM unnest(%b::uuid[]) AS c ORDER BY c "
    "ON CONFLICT (contact_id) DO NOTHING RETURNING contact_id"
)
_WRITE_SQL = (
    "UPDATE {table} AS s SET {channel} = v.times FROM ("
    "SELECT contact_id, array_agg(sent_at ORDER BY sent_at) AS times "
    "FROM unnest(%b::uuid[], %b::timestamptz[]) AS u(contact_id, sent_at) "
    "GROUP BY contact_id) AS v WHERE s.contact_id = v.contact_id"
)
_READ_SQL = "SELECT contact_id, email, push FROM {table} WHERE contact_id = ANY(%b)"
CHANNELS = ("email", "push")
NO_TIMES: tuple[dt.datetime, ...] = ()


def _fits(times: Iterable[dt.datetime], at: dt.datetime, caps: tuple[Cap, ...]) -> bool:
    """Whether one more message at `at` keeps `times` within every cap: a message counts in
    every window it lies after the start of (one deferred to a later time counts from now
    on)."""
    return all(sum(1 for t in times if t > at - cap.per) < cap.max for cap in caps)


@lru_cache(maxsize=256)
def _keeping(caps: tuple[Cap, ...]) -> tuple[dt.timedelta, int]:
    """What a row keeps of the times that `caps` counted: those within the widest window
    of now, and of those at most the largest `max`."""
    return max(cap.per for cap in caps), max(cap.max for cap in caps)


def _by_channel() -> dict[str, dict[uuid.UUID, Any]]:
    return {channel: {} for channel in CHANNELS}


@dataclass
class CapLedger:
    """The cap counts of one transaction: the contacts whose cap lock (their
    `ContactSends` row) it holds, with what the rows said, and the messages it counted
    that are not written yet (`flush` writes them, `discard` forgets them)."""

    held: set[uuid.UUID] = field(default_factory=set)
    # What the held rows say, by channel and contact (rows without times of a channel
    # are left out), as this transaction last wrote them.
    stored: dict[str, dict[uuid.UUID, list[dt.datetime]]] = field(default_factory=_by_channel)
    # Counted and not written, by channel and contact, and what each contact's row is
    # to keep (`_keeping` of the caps that counted: a batch of runs may span projects).
    pending: dict[str, dict[uuid.UUID, list[dt.datetime]]] = field(default_factory=_by_channel)
    keeps: dict[str, dict[uuid.UUID, tuple[dt.timedelta, int]]] = field(default_factory=_by_channel)
    # False for a ledger that only reads (a test run's, never written): no lock, no row.
    locking: bool = True

    def lock(self, contact_ids: Iterable[uuid.UUID]) -> None:
        """Locks (and reads) the rows of `contact_ids` not yet held, in key order, in one
        statement (a contact's first capped send makes its row: one more); held until the
        transaction ends."""
        wanted = list(set(contact_ids) - self.held)
        if not wanted:
            return
        self.held.update(wanted)
        table = connection.ops.quote_name(ContactSends._meta.db_table)
        # In binary (`rows_fetch`): a batch reads thousands of times, which text would
        # parse one by one. The statements sort the keys themselves.
        if not self.locking:
            self._read(rows_fetch(_READ_SQL.format(table=table), [wanted]))
            return
        locked = rows_fetch(_LOCK_SQL.format(table=table), [wanted])
        self._read(locked)
        if len(locked) == len(wanted):
            return
        missing = list(set(wanted).difference(row[0] for row in locked))
        made = rows_fetch(_MAKE_SQL.format(table=table), [missing])
        if len(made) < len(missing):
            # Made by another transaction since the first statement: locked now.
            raced = list(set(missing).difference(row[0] for row in made))
            self._read(rows_fetch(_LOCK_SQL.format(table=table), [raced]))

    def _read(self, rows: Iterable[tuple[uuid.UUID, Any, Any]]) -> None:
        email, push = self.stored["email"], self.stored["push"]
        for contact_id, email_times, push_times in rows:
            if email_times:
                email[contact_id] = email_times
            if push_times:
                push[contact_id] = push_times

    def room(
        self, *, policy: DeliveryPolicy, contact_id: uuid.UUID, channel: str, at: dt.datetime
    ) -> bool:
        """Whether one more message of `channel` to the contact at `at` stays within every
        cap (the contact's cap lock is taken first, unless held)."""
        return not self.capped(
            policy=policy, contact_ids=[contact_id], channel=channel, at={contact_id: at}
        )

    def capped(
        self,
        *,
        policy: DeliveryPolicy,
        contact_ids: list[uuid.UUID],
        channel: str,
        at: Mapping[uuid.UUID, dt.datetime],
    ) -> set[uuid.UUID]:
        """The contacts of `contact_ids` that one more message each (at `at[contact]`)
        would take past a cap: the rows not yet held locked and read (`lock`)."""
        caps = policy.caps_of(channel)
        if not caps or not contact_ids:
            return set()
        self.lock(contact_ids)
        stored, pending = self.stored[channel], self.pending[channel]
        # Fewer times than the smallest `max` fit every window, whenever they lie.
        least = min(cap.max for cap in caps)
        capped = set()
        for contact_id in contact_ids:
            times = stored.get(contact_id, NO_TIMES)
            added = pending.get(contact_id)
            if added:
                times = [*times, *added]
            if len(times) >= least and not _fits(times, at[contact_id], caps):
                capped.add(contact_id)
        return capped

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
        caps = policy.caps_of(channel)
        if caps:
            self.pending[channel].setdefault(contact_id, []).append(at)
            self.keeps[channel][contact_id] = _keeping(caps)

    def flush(self) -> None:
        """Writes the counted messages into their contacts' rows (locked by `room`), in
        the caller's transaction, one statement a channel: each row keeps, per channel,
        the times its caps can still count (within the widest window, at most the largest
        `max`)."""
        pending, self.pending = self.pending, _by_channel()
        keeps, self.keeps = self.keeps, _by_channel()
        if not any(pending.values()):
            return
        assert self.locking, "a ledger that only reads writes nothing"
        table = connection.ops.quote_name(ContactSends._meta.db_table)
        now = clock.now()
        for channel in CHANNELS:
            stored, keep_of = self.stored[channel], keeps[channel]
            contacts: list[uuid.UUID] = []
            times: list[dt.datetime] = []
            for contact_id, added in pending[channel].items():
                # Checks happen now or later (a deferred message's time is later): what
                # lies before the widest window from now can no longer count, and of what
                # does, the latest `max` decide every window (each is open towards later).
                widest, most = keep_of[contact_id]
                since = now - widest
                kept = [*stored.get(contact_id, NO_TIMES), *added]
                kept.sort()
                if kept[0] <= since:
                    kept = [t for t in kept if t > since]
                if len(kept) > most:
                    kept = kept[-most:]
                stored[contact_id] = kept
                contacts += [contact_id] * len(kept)
                times += kept
            if contacts:
                rows_fetch(_WRITE_SQL.format(table=table, channel=channel), [contacts, times])

    def discard(self) -> None:
        """Forgets the counted messages not written and the rows read (their transaction
        or savepoint is undone: the locks may have gone with it)."""
        self.held = set()
        self.stored = _by_channel()
        self.pending = _by_channel()
        self.keeps = _by_channel()
