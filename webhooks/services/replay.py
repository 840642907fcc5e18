"""Replays: one delivery, or an endpoint's failed deliveries of a time range, sent again
with the same `webhook-id` and body, as a fresh set of attempts due now."""

import datetime as dt
import uuid

from django.db import transaction

from config.api.errors import NotFound
from config.runtime import clock
from config.workqueue.models import WorkStatus
from tenancy.models import Project
from webhooks import conf
from webhooks.errors import DeliveryInProgress, EndpointDisabled
from webhooks.models import DeliveryState, WebhookDelivery, WebhookEndpoint
from webhooks.queue import WEBHOOK_QUEUE

# What a replayed row becomes: due now, with the kit's attempts (claims) counted afresh;
# `attempt_count`, the HTTP attempts the log shows, goes on counting.
_AGAIN = {
    "status": WorkStatus.ACCEPTED,
    "state": DeliveryState.PENDING,
    "attempts": 0,
    "claim_token": None,
    "lease_expires_at": None,
}


def webhook_delivery_replay(*, project: Project, delivery_id: uuid.UUID | str) -> WebhookDelivery:
    """Sends one delivery again, whatever its state, unless an attempt is under way (409)
    or its endpoint is disabled (409)."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("endpoint")
            .filter(project=project, pk=delivery_id, endpoint__deleted_at__isnull=True)
            .first()
        )
        if delivery is None:
            raise NotFound("No such webhook delivery.")
        if delivery.endpoint.disabled_at is not None:
            raise EndpointDisabled()
        if delivery.status == WorkStatus.PROCESSING:
            raise DeliveryInProgress()
        now = clock.now()
        WebhookDelivery.objects.filter(pk=delivery.pk).update(**_AGAIN, next_attempt_at=now)
        transaction.on_commit(WEBHOOK_QUEUE.wake)
    delivery.refresh_from_db()
    return delivery


def webhook_endpoint_replay(
    *,
    project: Project,
    endpoint_id: uuid.UUID | str,
    since: dt.datetime,
    until: dt.datetime | None,
) -> int:
    """Sends the endpoint's `failed` deliveries made in [since, until) again, oldest first
    and at most WEBHOOK_REPLAY_MAX_DELIVERIES per call; how many. Calling it again replays
    only what is still failed (the next ones past the bound, or those that failed again)."""
    with transaction.atomic():
        endpoint = (
            WebhookEndpoint.objects.select_for_update()
            .filter(project=project, pk=endpoint_id, deleted_at__isnull=True)
            .first()
        )
        if endpoint is None:
            raise NotFound("No such webhook endpoint.")
        if endpoint.disabled_at is not None:
            raise EndpointDisabled()
        chosen = WebhookDelivery.objects.filter(
            endpoint=endpoint, state=DeliveryState.FAILED, created_at__gte=since
        ).exclude(status=WorkStatus.PROCESSING)
        if until is not None:
            chosen = chosen.filter(created_at__lt=until)
        ids = list(
            chosen.order_by("created_at", "id").values_list("pk", flat=True)[
                : conf.replay_max_deliveries()
            ]
        )
        count = (
            WebhookDelivery.objects.filter(pk__in=ids, state=DeliveryState.FAILED)
            .exclude(status=WorkStatus.PROCESSING)
            .update(**_AGAIN, next_attempt_at=clock.now())
        )
        if count:
            transaction.on_commit(WEBHOOK_QUEUE.wake)
    return count


def webhook_deliveries_requeue(*, ids: list[uuid.UUID]) -> int:
    """The staff console's requeue: dead-lettered deliveries sent again (their endpoints'
    state is checked when they are sent)."""
    with transaction.atomic():
        count = WebhookDelivery.objects.filter(pk__in=ids, status=WorkStatus.DEAD_LETTERED).update(
            **_AGAIN, next_attempt_at=clock.now()
        )
        if count:
            transaction.on_commit(WEBHOOK_QUEUE.wake)
    return count
