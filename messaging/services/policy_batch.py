"""The delivery policy over a batch of messages, one to each of many contacts (a campaign's
fan-out batch; docs/API.md, Delivery policy).

The caps are checked and counted by one statement for the whole batch, before its
messages are made (`_TAKE_SQL`): an `INSERT ... ON CONFLICT DO UPDATE` over the batch's
contacts in key order that makes the rows of contacts without one with the message's
time, and adds the time to the others' rows where every cap leaves room. It locks every
row it meets, updated or not, waiting while another transaction holds one and then
reading what that one committed, as `CapLedger.lock` does, so two transactions racing for
a contact's last slot serialise on the row and the second sees the first's send; and two
batches lock their rows in the same order, so they never wait for each other in a cycle.
The contacts whose row it did not write are the capped ones. A contact that then gets no
message (its template could not be rendered, a push contact without a device) has its
time taken out again (`_GIVE_BACK_SQL`): nothing else in between changed its locked row.

The rule is `CapLedger`'s (messaging/services/policy.py), written in SQL: a message at
`at` fits when, for every cap, fewer than `max` times of the channel lie after
`at - per`; fewer times than the smallest `max` fit whenever they lie. A write keeps
the times after the widest window from now, in order; it leaves the most recent `max`
bound to `CapLedger.flush`, which changes no check (the windows are open towards later)
and would keep `_GIVE_BACK_SQL` from putting a row back as it was.
"""

import datetime as dt
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import connection

from config.db.bulk import statement_run
from config.runtime import clock
from messaging.models import ContactSends
from messaging.services.policy import CHANNELS, NO_POLICY, DeliveryPolicy

# `{at}` is the message's time: one for the batch (`%(at)b`) or each contact's (`u.at`,
# from `{source}`). The fast branch of the CASE appends in order to a row with nothing
# too old to keep; the other sorts and drops what is.
_TAKE_SQL = (
    "INSERT INTO {table} AS s (contact_id, {channel}, {other}) "
    "SELECT u.c, ARRAY[{at}], '{{}}' FROM {source} ORDER BY u.c "
    "ON CONFLICT (contact_id) DO UPDATE SET {channel} = CASE "
    "WHEN s.{channel} = '{{}}' THEN EXCLUDED.{channel} "
    "WHEN s.{channel}[1] > %(since)b "
    "AND s.{channel}[cardinality(s.{channel})] <= EXCLUDED.{channel}[1] "
    "THEN s.{channel} || EXCLUDED.{channel} "
    "ELSE ARRAY(SELECT t FROM unnest(s.{channel} || EXCLUDED.{channel}) AS t "
    "WHERE t > %(since)b ORDER BY t) END "
    "WHERE cardinality(s.{channel}) < %(least)b OR NOT EXISTS ("
    "SELECT FROM unnest(%(pers)b::bigint[], %(maxes)b::int[]) AS c(per, max) "
    "WHERE (SELECT count(*) FROM unnest(s.{channel}) AS t "
    "WHERE t > EXCLUDED.{channel}[1] - c.per * interval '1 microsecond') >= c.max) "
    "RETURNING contact_id"
)
_ONE_TIME = {"source": "unnest(%(ids)b::uuid[]) AS u(c)", "at": "%(at)b::timestamptz"}
_EACH_TIME = {
    "source": "unnest(%(ids)b::uuid[], %(ats)b::timestamptz[]) AS u(c, at)",
    "at": "u.at",
}
# One occurrence of the contact's time out of its row, which the batch holds locked.
_GIVE_BACK_SQL = (
    "UPDATE {table} AS s SET {channel} = "
    "s.{channel}[:array_position(s.{channel}, u.at) - 1] "
    "|| s.{channel}[array_position(s.{channel}, u.at) + 1:] "
    "FROM unnest(%(ids)b::uuid[], %(ats)b::timestamptz[]) AS u(c, at) "
    "WHERE s.contact_id = u.c AND array_position(s.{channel}, u.at) IS NOT NULL"
)
MICROSECOND = dt.timedelta(microseconds=1)


class BatchHold:
    """The policy over one message each to a batch of contacts (a campaign's fan-out
    batch): when each goes (the end of its quiet hours, else now), and whom the caps
    leave out, checked and counted for all in one statement; then the messages that were
    not made are taken out of the count."""

    def __init__(self, *, policy: DeliveryPolicy, project_id: uuid.UUID, channel: str) -> None:
        assert channel in CHANNELS
        self.policy = policy
        self.channel = channel
        self.project_id = project_id
        self.now = clock.now()
        # The contacts in quiet hours, and when their message goes.
        self.held: dict[uuid.UUID, dt.datetime] = {}
        # The contacts whose message the caps counted.
        self.counted: list[uuid.UUID] = []

    def apply(
        self, contacts: Iterable[tuple[uuid.UUID, Mapping[str, Any] | None]]
    ) -> set[uuid.UUID]:
        """Reads when each contact's (id, fields) message goes and counts it against the
        caps (`count` takes back those not made); returns the contacts capped."""
        policy, now = self.policy, self.now
        if policy is NO_POLICY:
            return set()
        contacts = list(contacts)
        ids = [pk for pk, _ in contacts]
        if policy.quiet is not None:
            for pk, fields in contacts:
                until = policy.quiet_until(now, fields)
                if until is not None:
                    self.held[pk] = until
        caps = policy.caps_of(self.channel)
        if not caps or not ids:
            return set()
        least = min(cap.max for cap in caps)
        if least < 1:
            return set(ids)
        params: dict[str, Any] = {
            "ids": ids,
            "since": now - max(cap.per for cap in caps),
            "least": least,
            "pers": [cap.per // MICROSECOND for cap in caps],
            "maxes": [cap.max for cap in caps],
        }
        if self.held:
            held = self.held
            params["ats"] = [held.get(pk, now) for pk in ids]
            shape = _EACH_TIME
        else:
            params["at"] = now
            shape = _ONE_TIME
        rows = statement_run(self._sql(_TAKE_SQL, **shape), params, prepare=True)
        if len(rows) == len(ids):
            self.counted = ids
            return set()
        taken = {row[0] for row in rows}
        self.counted = [pk for pk in ids if pk in taken]
        return set(ids) - taken

    def _sql(self, template: str, **parts: str) -> str:
        table = connection.ops.quote_name(ContactSends._meta.db_table)
        other = next(channel for channel in CHANNELS if channel != self.channel)
        return template.format(table=table, channel=self.channel, other=other, **parts)

    def deferred(self) -> dict[uuid.UUID, dt.datetime]:
        """The contacts whose message waits for the end of their quiet hours, and until."""
        return self.held

    def count(self, reached: Iterable[uuid.UUID]) -> None:
        """Keeps counted the messages made (to `reached`, contacts `apply` did not cap);
        takes the others' out."""
        counted, self.counted = self.counted, []
        if not counted:
            return
        reached = list(reached)
        if len(reached) == len(counted):
            return  # each reached contact is a counted one: all were reached
        made = set(reached)
        back = [pk for pk in counted if pk not in made]
        held, now = self.held, self.now
        statement_run(
            self._sql(_GIVE_BACK_SQL),
            {"ids": back, "ats": [held.get(pk, now) for pk in back]},
            prepare=True,
        )
