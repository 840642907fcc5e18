"""The push deliveries as a work queue: the kit's claim, retries, dead-letter and wake-up,
with the delivery tunables (Django settings `PUSH_*`)."""

from django.conf import settings
from django.db.models import Prefetch

from config.workqueue.policy import RetryPolicy, retry_policy_for
from config.workqueue.queue import WorkQueue
from pushproviders.models import PushDelivery, PushMessage

# 10 s, 30 s, 90 s ... capped at an hour; eight attempts span about five hours. Overridden
# service-wide by PUSH_RETRY_BASE_SECONDS, _FACTOR, _CAP_SECONDS, _MAX_ATTEMPTS.
DEFAULT_RETRY_POLICY = RetryPolicy(
    base_seconds=10.0, factor=3.0, cap_seconds=3600.0, max_attempts=8
)
# The message fields a batch reads (events, the campaign check, the roll-up): the rest (the
# title, body and data, copied onto each delivery) would be parsed per message for nothing.
MESSAGE_FIELDS = ("project_id", "template_id", "campaign_id")


def push_retry_policy(delivery: PushDelivery | None = None) -> RetryPolicy:
    return retry_policy_for(None, default=DEFAULT_RETRY_POLICY, setting_prefix="PUSH_RETRY_")


PUSH_QUEUE: WorkQueue[PushDelivery] = WorkQueue(
    model=PushDelivery,
    task="pushproviders.deliver_push",
    wake_key="pushproviders:push:wake",
    retry_policy=push_retry_policy,
    batch_size=lambda: int(settings.PUSH_CLAIM_BATCH_SIZE),
    lease_seconds=lambda: float(settings.PUSH_LEASE_SECONDS),
    wake_debounce_seconds=lambda: float(getattr(settings, "PUSH_WAKE_DEBOUNCE_SECONDS", 0.5)),
    settle_seconds=lambda: float(getattr(settings, "PUSH_WAKE_SETTLE_SECONDS", 0.3)),
    order_by=("next_attempt_at", "created_at", "position"),
    prefetch_related=(
        Prefetch("message", queryset=PushMessage.objects.only(*MESSAGE_FIELDS)),
        "message__project",
    ),
)
