"""Push workers. The push deliveries table is the queue: these tasks only say "look now"."""

import logging

from celery import shared_task

from pushproviders import conf
from pushproviders.queue import PUSH_QUEUE
from pushproviders.services.delivery import push_deliver_due
from pushproviders.services.outcomes import push_messages_roll_up_stale

logger = logging.getLogger(__name__)


@shared_task(name="pushproviders.deliver_push", ignore_result=True)
def deliver_push() -> int:
    """Woken after a push message commits (debounced): sends due deliveries until none are
    left or the time budget is spent, then hands the rest to a fresh task."""
    claimed, more = push_deliver_due(budget_seconds=conf.task_time_budget_seconds())
    if more:
        PUSH_QUEUE.publish()
    return claimed


@shared_task(name="pushproviders.sweep_push", ignore_result=True)
def sweep_push() -> int:
    """The safety net on beat: deliveries no wake-up reached, retries that came due,
    expired leases of dead workers, and messages left without their roll-up."""
    claimed, more = push_deliver_due(budget_seconds=conf.task_time_budget_seconds())
    if more:
        PUSH_QUEUE.publish()
    rolled = push_messages_roll_up_stale()
    if claimed or rolled:
        logger.info("Push sweep claimed %d deliveries, rolled up %d messages", claimed, rolled)
    return claimed
