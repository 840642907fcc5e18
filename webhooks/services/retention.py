"""The delivery log's retention: delivered and failed deliveries older than
WEBHOOK_RETENTION_DAYS are deleted, oldest first and a bounded number per run; pending
ones (still being retried) stay whatever their age. Endpoints deleted that long ago go
too once no delivery points at them."""

import datetime as dt

from django.db import transaction
from django.db.models import Exists, OuterRef

from config.runtime import clock
from webhooks import conf
from webhooks.models import DeliveryState, WebhookDelivery, WebhookEndpoint

FINAL_STATES = (DeliveryState.DELIVERED.value, DeliveryState.FAILED.value)


def webhook_deliveries_purge_expired(*, limit: int = conf.PURGE_MAX_ROWS_PER_RUN) -> int:
    """Deletes up to `limit` final deliveries past retention; how many."""
    cutoff = clock.now() - dt.timedelta(days=conf.retention_days())
    with transaction.atomic():
        ids = list(
            WebhookDelivery.objects.filter(state__in=FINAL_STATES, created_at__lt=cutoff)
            .order_by("created_at")
            .values_list("pk", flat=True)[:limit]
        )
        if not ids:
            return 0
        # A replay may have made one pending again meanwhile: the state is checked again.
        deleted, _ = WebhookDelivery.objects.filter(pk__in=ids, state__in=FINAL_STATES).delete()
    return deleted


def webhook_endpoints_purge_deleted(*, limit: int = conf.PURGE_MAX_ROWS_PER_RUN) -> int:
    """Removes endpoints deleted more than WEBHOOK_RETENTION_DAYS ago whose log is empty
    (their pending deliveries fail at their next attempt, then age out); how many."""
    cutoff = clock.now() - dt.timedelta(days=conf.retention_days())
    ids = list(
        WebhookEndpoint.objects.filter(deleted_at__lt=cutoff)
        .exclude(Exists(WebhookDelivery.objects.filter(endpoint=OuterRef("pk"))))
        .values_list("pk", flat=True)[:limit]
    )
    if not ids:
        return 0
    deleted, _ = (
        WebhookEndpoint.objects.filter(pk__in=ids)
        .exclude(Exists(WebhookDelivery.objects.filter(endpoint=OuterRef("pk"))))
        .delete()
    )
    return deleted
