"""The emails' deliveries as a work queue: the kit's claim, retries, dead-letter and
wake-up, with the delivery tunables (Django settings `EMAIL_*`)."""

from django.conf import settings

from config.workqueue.policy import RetryPolicy, retry_policy_for
from config.workqueue.queue import WorkQueue
from messaging.models.emails import EmailDelivery

# 10 s, 30 s, 90 s ... capped at an hour; eight attempts span about five hours. Overridden
# service-wide by EMAIL_RETRY_BASE_SECONDS, _FACTOR, _CAP_SECONDS, _MAX_ATTEMPTS.
DEFAULT_RETRY_POLICY = RetryPolicy(
    base_seconds=10.0, factor=3.0, cap_seconds=3600.0, max_attempts=8
)


def email_retry_policy(delivery: EmailDelivery | None = None) -> RetryPolicy:
    return retry_policy_for(None, default=DEFAULT_RETRY_POLICY, setting_prefix="EMAIL_RETRY_")


EMAIL_QUEUE: WorkQueue[EmailDelivery] = WorkQueue(
    model=EmailDelivery,
    task="messaging.deliver_emails",
    wake_key="messaging:emails:wake",
    retry_policy=email_retry_policy,
    batch_size=lambda: int(settings.EMAIL_CLAIM_BATCH_SIZE),
    lease_seconds=lambda: float(settings.EMAIL_LEASE_SECONDS),
    wake_debounce_seconds=lambda: float(getattr(settings, "EMAIL_WAKE_DEBOUNCE_SECONDS", 0.5)),
    settle_seconds=lambda: float(getattr(settings, "EMAIL_WAKE_SETTLE_SECONDS", 0.3)),
    order_by=("next_attempt_at", "created_at"),
    prefetch_related=("email", "email__project"),
)
