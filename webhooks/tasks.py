"""Webhook workers. The deliveries table is the queue: these tasks only say "look now"."""

import logging

from celery import shared_task

from webhooks import conf
from webhooks.queue import WEBHOOK_QUEUE
from webhooks.services.delivery import webhook_deliver_due
from webhooks.services.outcomes import deliveries_dead_finish
from webhooks.services.retention import (
    webhook_deliveries_purge_expired,
    webhook_endpoints_purge_deleted,
)

logger = logging.getLogger(__name__)


@shared_task(name="webhooks.deliver", ignore_result=True)
def deliver() -> int:
    """Woken after deliveries commit (debounced) and when retries come due: sends due
    deliveries until none are left or the time budget is spent, then hands the rest on."""
    claimed, more = webhook_deliver_due(budget_seconds=conf.task_time_budget_seconds())
    if more:
        WEBHOOK_QUEUE.publish()
    return claimed


@shared_task(name="webhooks.sweep", ignore_result=True)
def sweep() -> int:
    """The safety net on beat: deliveries no wake-up reached, retries that came due,
    expired leases of dead workers, and deliveries a time limit dead-lettered."""
    deliveries_dead_finish()
    claimed, more = webhook_deliver_due(budget_seconds=conf.task_time_budget_seconds())
    if more:
        WEBHOOK_QUEUE.publish()
    if claimed:
        logger.info("Webhook sweep claimed %d deliveries", claimed)
    return claimed


@shared_task(name="webhooks.purge_expired", ignore_result=True)
def purge_expired() -> int:
    """Deletes delivered and failed deliveries past WEBHOOK_RETENTION_DAYS, a bounded
    amount per run, then the endpoints deleted that long ago whose log is empty."""
    deleted = webhook_deliveries_purge_expired()
    endpoints = webhook_endpoints_purge_deleted()
    if deleted or endpoints:
        logger.info(
            "Deleted %d webhook deliveries and %d endpoints past retention", deleted, endpoints
        )
    return deleted
