"""The emails' deliveries as a work queue: the kit's claim, retries, dead-letter and
wake-up, with the delivery tunables (messaging/conf.py)."""

from config.libinternals import related_cache
from config.workqueue.queue import WorkQueue
from messaging import conf
from messaging.models.emails import Email, EmailDelivery
from messaging.selectors.emails import emails_by_ids


def deliveries_emails_load(deliveries: list[EmailDelivery]) -> None:
    """Gives each claimed delivery its email (`delivery.email`, None when it is gone), read
    in the partitions of the emails' times alone (`emails_by_ids`): a lookup's
    `id IN (...)` would look in every partition's primary key index."""
    emails = emails_by_ids(Email.objects.all(), {delivery.email_id for delivery in deliveries})
    for delivery in deliveries:
        email = related_cache(delivery)["email"] = emails.get(delivery.email_id)
        if email is not None:
            related_cache(email)["delivery"] = delivery  # what a prefetch sets too


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
    load_related=deliveries_emails_load,
    prefetch_related=("email__project",),
)
