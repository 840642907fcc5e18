"""What a delivery attempt comes to, recorded in the kit's transaction for the rows: a 2xx
marks the delivery `delivered` and the endpoint healthy; a failure counts an attempt,
keeps the status code and a short error, and is retried by the queue's policy (then
`failed`). The endpoint remembers its first failure since its last success, and is
disabled, with `sendrealm.webhook.disabled`, once that is WEBHOOK_DISABLE_AFTER_HOURS old."""

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models.functions import Left

from config.registries.outbox import system_event_emit
from config.runtime.clock import iso_utc
from config.workqueue.errors import WorkError
from config.workqueue.models import WorkStatus
from config.workqueue.work import BatchWork, PerItem
from webhooks import conf
from webhooks.models import DeliveryState, WebhookDelivery, WebhookEndpoint

DISABLED_EVENT = "webhook.disabled"
WORKERS_LOST = "Workers kept stopping while delivering this event."


@dataclass(frozen=True)
class Attempt:
    """One attempt's outcome: `error` None means a 2xx answer. `counted` is False when no
    request was made for reasons of our own (a disabled endpoint)."""

    at: dt.datetime
    status_code: int | None
    error: WorkError | None
    counted: bool = True


class Delivered(BatchWork[WebhookDelivery]):
    """Deliveries the endpoint answered with a 2xx: recorded with `WorkQueue.complete`."""

    def __init__(self, attempts: dict[Any, Attempt]) -> None:
        self.attempts = attempts

    def finish(self, items: list[WebhookDelivery]) -> None:
        # A success ends the endpoint's failing streak.
        WebhookEndpoint.objects.filter(
            pk__in={item.endpoint_id for item in items}, failing_since__isnull=False
        ).update(failing_since=None)

    def done_values(self, items: list[WebhookDelivery]) -> dict[str, Any]:
        return {
            "state": DeliveryState.DELIVERED.value,
            "delivered_at": PerItem({item.pk: self.attempts[item.pk].at for item in items}),
            "last_status_code": PerItem(
                {item.pk: self.attempts[item.pk].status_code for item in items}
            ),
            "attempt_count": PerItem({item.pk: item.attempt_count + 1 for item in items}),
            "error": None,
        }


class Failures(BatchWork[WebhookDelivery]):
    """Failed attempts: `run` raises the attempt's error, so the kit retries the row with
    backoff or dead-letters it; `dropped` records what the log shows."""

    def __init__(self, attempts: dict[Any, Attempt]) -> None:
        self.attempts = attempts

    def run(self, item: WebhookDelivery) -> None:
        attempt = self.attempts.get(item.pk)
        if attempt is None or attempt.error is None:
            raise WorkError("The delivery was not attempted.", code="not_attempted")
        raise attempt.error

    def dropped(self, item: WebhookDelivery) -> None:
        attempt = self.attempts.get(item.pk)
        if attempt is None or attempt.error is None:
            return
        error = attempt.error
        final = error.permanent or item.attempts >= conf.retry_policy().max_attempts
        changes: dict[str, Any] = {"error": str(error)[:500]}
        if attempt.counted:
            changes.update(
                attempt_count=item.attempt_count + 1, last_status_code=attempt.status_code
            )
        if final:
            changes["state"] = DeliveryState.FAILED.value
        WebhookDelivery.objects.filter(pk=item.pk, state=DeliveryState.PENDING).update(**changes)
        if attempt.counted:
            endpoint_failure_record(endpoint=item.endpoint, at=attempt.at)


def endpoint_failure_record(*, endpoint: WebhookEndpoint, at: dt.datetime) -> bool:
    """Notes a failed attempt on the endpoint and disables it when every attempt failed
    for WEBHOOK_DISABLE_AFTER_HOURS; whether this call disabled it."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk, failing_since__isnull=True).update(
        failing_since=at
    )
    cutoff = at - dt.timedelta(hours=conf.disable_after_hours())
    hours = conf.disable_after_hours()
    reason = f"Every delivery failed for {hours:g} hours."
    disabled = WebhookEndpoint.objects.filter(
        pk=endpoint.pk, disabled_at__isnull=True, failing_since__lte=cutoff
    ).update(disabled_at=at, disabled_reason=reason)
    if not disabled:
        return False
    endpoint.refresh_from_db(fields=["failing_since", "disabled_at", "disabled_reason"])
    assert endpoint.failing_since is not None
    system_event_emit(
        project=endpoint.project,
        name=DISABLED_EVENT,
        payload={
            "endpoint_id": str(endpoint.pk),
            "url": endpoint.url,
            "reason": reason,
            "failing_since": iso_utc(endpoint.failing_since),
            "disabled_at": iso_utc(at),
        },
    )
    return True


def deliveries_dead_finish(*, limit: int = 500) -> int:
    """Deliveries the kit dead-lettered without our outcome (the task's time limit ran out
    on their last attempt): `failed`, with the kit's error. The sweep's share."""
    unfinished = WebhookDelivery.objects.filter(
        status=WorkStatus.DEAD_LETTERED, state=DeliveryState.PENDING
    )
    ids = list(unfinished.values_list("pk", flat=True)[:limit])
    if not ids:
        return 0
    return unfinished.filter(pk__in=ids).update(
        state=DeliveryState.FAILED, error=Left("last_error", 500)
    )


def deliveries_lost_finish(*, ids: list[Any]) -> int:
    """Deliveries the kit dead-lettered because workers kept dying on them: `failed`."""
    return WebhookDelivery.objects.filter(
        pk__in=ids, status=WorkStatus.DEAD_LETTERED, state=DeliveryState.PENDING
    ).update(state=DeliveryState.FAILED, error=WORKERS_LOST)
