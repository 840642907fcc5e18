"""What push delivery records: the `sendrealm.push.*` events of a delivery, the outcomes of
a batch (sent, invalid token, failed, retried) in short transactions, and the roll-up of
a message once every one of its deliveries is final: all sent `sent`, some
`partially_sent`, none `failed`."""

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection

from config.db.bulk import statement_run
from config.registries.outbox import SystemEvent, system_events_emit
from config.runtime import clock
from config.workqueue.errors import WorkError
from config.workqueue.work import BatchWork, PerItem
from pushproviders import conf
from pushproviders.models import (
    PushDelivery,
    PushDeliveryState,
    PushInstallation,
    PushMessage,
    PushMessageStatus,
)
from pushproviders.queue import PUSH_QUEUE
from tenancy.models import Meter
from tenancy.usage import usage_record

# --- events ---------------------------------------------------------------------------------


def _push_event(message: PushMessage, delivery: PushDelivery, **extra: Any) -> SystemEvent:
    return SystemEvent(
        payload={
            "push_id": str(message.pk),
            "contact_id": str(delivery.contact_id) if delivery.contact_id else None,
            "template_id": str(message.template_id) if message.template_id else None,
            "installation_id": str(delivery.installation_id),
            "platform": delivery.platform,
            **extra,
        },
        contact_id=delivery.contact_id,
    )


def push_event_emit(
    *, name: str, message: PushMessage, delivery: PushDelivery, **extra: Any
) -> None:
    """Records `sendrealm.<name>` about one delivery, in the caller's transaction."""
    system_events_emit(
        project=message.project, name=name, events=[_push_event(message, delivery, **extra)]
    )


def _by_project(deliveries: Iterable[PushDelivery]) -> list[tuple[Any, list[PushDelivery]]]:
    """The deliveries (their messages loaded) grouped by their project."""
    groups: dict[Any, list[PushDelivery]] = defaultdict(list)
    for delivery in deliveries:
        groups[delivery.message.project_id].append(delivery)
    return [(members[0].message.project, members) for members in groups.values()]


def delivery_error(error: Exception) -> str:
    """The reason a delivery shows: the error's message, else its code."""
    return str(error) or getattr(error, "code", "") or type(error).__name__


# --- the roll-up ----------------------------------------------------------------------------


def push_messages_roll_up(*, messages: Iterable[tuple[Any, dt.datetime]]) -> int:
    """Sets the status of the messages (id, created_at) whose deliveries are all final;
    returns how many. Their times name their deliveries' partitions, the only ones read.

    Runs after the deliveries' outcomes committed, so of two workers finishing the last
    deliveries of one message, the later one sees both; the update is conditional on
    `queued`, so a message rolls up once."""
    pairs = set(messages)
    if not pairs:
        return 0
    return _roll_up_postgresql(sorted(pair[0] for pair in pairs), sorted({t for _, t in pairs}))


def _roll_up_postgresql(ids: list[Any], times: list[dt.datetime]) -> int:
    """`push_messages_roll_up` in one statement: the counts and the conditional update
    together, where the ORM's aggregate and up to three updates cost the worker more to
    build than the database to run."""
    quote = connection.ops.quote_name
    messages, deliveries = PushMessage._meta, PushDelivery._meta

    def column(meta: Any, name: str) -> str:
        return quote(meta.get_field(name).column)

    state, message_id = column(deliveries, "state"), column(deliveries, "message_id")
    sql = (
        f"UPDATE {quote(messages.db_table)} AS m SET "  # noqa: S608 (names from the models)
        f"{column(messages, 'status')} = CASE WHEN c.sent = c.total THEN %b "
        f"WHEN c.sent > 0 THEN %b ELSE %b END, "
        f"{column(messages, 'sent_at')} = CASE WHEN c.sent > 0 THEN %b::timestamptz END "
        f"FROM (SELECT {message_id} AS id, count(*) AS total, "
        f"count(*) FILTER (WHERE {state} = %b) AS sent "
        f"FROM {quote(deliveries.db_table)} WHERE {message_id} = ANY(%b::uuid[]) "
        # The messages' times: their deliveries' partitions only.
        f"AND {column(deliveries, 'message_created_at')} = ANY(%b::timestamptz[]) "
        f"GROUP BY {message_id} HAVING count(*) FILTER (WHERE {state} = %b) = 0) AS c "
        f"WHERE m.{column(messages, 'id')} = c.id AND m.{column(messages, 'status')} = %b "
        f"RETURNING m.{column(messages, 'id')}"
    )
    params = [
        PushMessageStatus.SENT.value,
        PushMessageStatus.PARTIALLY_SENT.value,
        PushMessageStatus.FAILED.value,
        clock.now(),
        PushDeliveryState.SENT.value,
        ids,
        times,
        PushDeliveryState.QUEUED.value,
        PushMessageStatus.QUEUED.value,
    ]
    return len(statement_run(sql, params))


def push_messages_roll_up_stale(*, older_than_seconds: float = 60.0, limit: int = 500) -> int:
    """The sweep's share: messages whose last worker stopped between recording the
    outcomes and rolling them up."""
    before = clock.now() - dt.timedelta(seconds=older_than_seconds)
    stale = (
        PushMessage.objects.filter(status=PushMessageStatus.QUEUED, created_at__lt=before)
        .exclude(deliveries__state=PushDeliveryState.QUEUED)
        .values_list("pk", "created_at")[:limit]
    )
    return push_messages_roll_up(messages=list(stale))


# --- recording outcomes ---------------------------------------------------------------------


@dataclass(frozen=True)
class Sent:
    provider_message_id: str
    at: dt.datetime


@dataclass(frozen=True)
class Failed:
    error: WorkError
    # When the send was tried: a device that registered again after it stays active.
    at: dt.datetime


class Outcomes(BatchWork[PushDelivery]):
    """Records what sending found, inside the kit's transaction for the rows."""

    def __init__(self, results: dict[Any, Sent | Failed]) -> None:
        self.results = results

    def run(self, item: PushDelivery) -> None:
        result = self.results.get(item.pk)
        if isinstance(result, Failed):
            raise result.error
        if result is None:
            raise WorkError("The delivery was not attempted.", code="not_attempted")

    def finish(self, items: list[PushDelivery]) -> None:
        """The done items are the sent ones (the others raised): one `sendrealm.push.send`
        each, written together in the transaction that marks them done, so a delivery is
        announced once even when a dead worker's chunk is finished by another."""
        for project, members in _by_project(items):
            system_events_emit(
                project=project,
                name="push.send",
                events=[_push_event(item.message, item) for item in members],
            )
            # Metered once the provider took it; counted after this transaction commits.
            usage_record(project=project, meter=Meter.PUSH_SENT, count=len(members))

    def done_values(self, items: list[PushDelivery]) -> dict[str, Any]:
        sent = {
            item.pk: result
            for item in items
            if isinstance(result := self.results.get(item.pk), Sent)
        }
        return {
            "state": PushDeliveryState.SENT.value,
            "provider_message_id": PerItem(
                {pk: result.provider_message_id for pk, result in sent.items()}
            ),
            "sent_at": PerItem({pk: result.at for pk, result in sent.items()}),
            "error": None,
        }

    def dropped(self, item: PushDelivery) -> None:
        result = self.results.get(item.pk)
        if isinstance(result, Failed):
            error, at = result.error, result.at
        else:
            # Sent, but recording it failed: the kit retries the delivery.
            error = WorkError("Recording the outcome failed.", code="record_failed")
            at = clock.now()
        reason = delivery_error(error)
        final = error.permanent or item.attempts >= conf.retry_policy().max_attempts
        if not final:
            # Shown while the delivery is retried; cleared when it is sent.
            PushDelivery.objects.filter(
                pk=item.pk,
                message_created_at=item.message_created_at,
                state=PushDeliveryState.QUEUED,
            ).update(error=reason)
            return
        invalid_token = bool(getattr(error, "invalid_token", False))
        push_delivery_fail(
            delivery=item,
            reason=reason,
            state=PushDeliveryState.INVALID_TOKEN if invalid_token else PushDeliveryState.FAILED,
            sent_at=at,
        )


def push_delivery_fail(
    *, delivery: PushDelivery, reason: str, state: str, sent_at: dt.datetime | None = None
) -> bool:
    """Makes a queued delivery final as failed (or `invalid_token`, which also deactivates
    its installation unless the device registered again since `sent_at`) and records
    `sendrealm.push.failure`; False when it was not queued any more."""
    updated = PushDelivery.objects.filter(
        pk=delivery.pk,
        message_created_at=delivery.message_created_at,
        state=PushDeliveryState.QUEUED,
    ).update(state=state, error=reason)
    if not updated:
        return False
    if state == PushDeliveryState.INVALID_TOKEN:
        PushInstallation.objects.filter(
            pk=delivery.installation_id, active=True, last_seen_at__lte=sent_at or clock.now()
        ).update(active=False, updated_at=clock.now())
    push_event_emit(
        name="push.failure",
        message=delivery.message,
        delivery=delivery,
        status=state,
        error=reason,
    )
    return True


class Recorder:
    """Records accepted deliveries in chunks of PUSH_RECORD_EVERY while the batch goes on,
    so a worker killed mid-batch leaves at most one chunk to be sent again; their messages
    roll up once at the end of the batch."""

    def __init__(self, token: Any, results: dict[Any, Sent | Failed]) -> None:
        self.token = token
        self.results = results
        self.pending: list[PushDelivery] = []
        self.every = conf.record_every()
        # The messages (id, created_at) of the recorded chunks, rolled up once for the
        # batch (`roll_up`).
        self.messages: set[tuple[Any, dt.datetime]] = set()

    def add(self, item: PushDelivery) -> None:
        self.pending.append(item)
        if len(self.pending) >= self.every:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        chunk, self.pending = self.pending, []
        # Every one of them was sent: one conditional update marks the ones this claim
        # still holds, and their events are written with it.
        PUSH_QUEUE.complete(token=self.token, items=chunk, work=Outcomes(self.results))
        self.messages.update((item.message_id, item.message_created_at) for item in chunk)

    def roll_up(self, more: Iterable[tuple[Any, dt.datetime]] = ()) -> None:
        """Rolls up the messages of every recorded chunk (and `more`) at once, after the
        last chunk committed: one look at their deliveries per batch rather than per chunk.
        A worker that stops before leaves them to the stale sweep."""
        self.flush()
        push_messages_roll_up(messages=self.messages.union(more))
        self.messages.clear()
