"""The push deliveries as a work queue: the kit's claim, retries, dead-letter and wake-up,
with the delivery tunables (pushproviders/conf.py)."""

from django.db.models import Prefetch

from config.workqueue.queue import WorkQueue
from pushproviders import conf
from pushproviders.models import PushDelivery, PushMessage

# The message fields a batch reads (events, the campaign check, the roll-up): the rest (the
# title, body and data, copied onto each delivery) would be parsed per message for nothing.
MESSAGE_FIELDS = ("project_id", "template_id", "campaign_id")


PUSH_QUEUE: WorkQueue[PushDelivery] = WorkQueue(
    model=PushDelivery,
    task="pushproviders.deliver_push",
    wake_key="pushproviders:push:wake",
    retry_policy=conf.retry_policy,
    batch_size=conf.claim_batch_size,
    lease_seconds=conf.lease_seconds,
    wake_debounce_seconds=conf.wake_debounce_seconds,
    settle_seconds=conf.wake_settle_seconds,
    order_by=("next_attempt_at", "created_at", "position"),
    prefetch_related=(
        Prefetch("message", queryset=PushMessage.objects.only(*MESSAGE_FIELDS)),
        "message__project",
    ),
)
