"""The emails' deliveries as a work queue: the kit's claim, retries, dead-letter and
wake-up, with the delivery tunables (messaging/conf.py)."""

from config.workqueue.queue import WorkQueue
from messaging import conf
from messaging.models.emails import EmailDelivery

EMAIL_QUEUE: WorkQueue[EmailDelivery] = WorkQueue(
    model=EmailDelivery,
    task="messaging.deliver_emails",
    wake_key="messaging:emails:wake",
    retry_policy=conf.retry_policy,
    batch_size=conf.claim_batch_size,
    lease_seconds=conf.lease_seconds,
    wake_debounce_seconds=conf.wake_debounce_seconds,
    settle_seconds=conf.wake_settle_seconds,
    order_by=("next_attempt_at", "created_at"),
    prefetch_related=("email", "email__project"),
)
