"""The webhook deliveries as a work queue: the kit's claim, retries, dead-letter and
wake-up, with the delivery tunables (webhooks/conf.py)."""

from config.workqueue.queue import WorkQueue
from webhooks import conf
from webhooks.models import WebhookDelivery

WEBHOOK_QUEUE: WorkQueue[WebhookDelivery] = WorkQueue(
    model=WebhookDelivery,
    task="webhooks.deliver",
    wake_key="webhooks:deliveries:wake",
    retry_policy=conf.retry_policy,
    batch_size=conf.claim_batch_size,
    lease_seconds=conf.lease_seconds,
    wake_debounce_seconds=conf.wake_debounce_seconds,
    settle_seconds=conf.wake_settle_seconds,
    order_by=("next_attempt_at", "created_at"),
    prefetch_related=("endpoint",),
)
