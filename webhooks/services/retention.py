"""The delivery log's retention: delivered and failed deliveries older than
WEBHOOK_RETENTION_DAYS are deleted, oldest first and a bounded number per run; pending
ones (still being retried) stay whatever their age."""

import datetime as dt

from django.db import transaction

from config.runtime import clock
from webhooks import conf
from webhooks.models import DeliveryState, WebhookDelivery

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
