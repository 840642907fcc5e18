"""Messaging workers. The email deliveries table is the queue: these tasks only say
"look now"."""

import logging

from celery import shared_task

from messaging import conf
from messaging.queue import EMAIL_QUEUE
from messaging.services.campaign_fanout import CAMPAIGN_FANOUT_QUEUE, campaign_fanout_due
from messaging.services.campaign_progress import campaigns_finish_stale
from messaging.services.campaign_sending import campaigns_start_due
from messaging.services.delivery import emails_deliver_due
from messaging.services.esp_events import esp_event_receipts_purge

logger = logging.getLogger(__name__)


@shared_task(name="messaging.deliver_emails", ignore_result=True)
def deliver_emails() -> int:
    """Woken after an email commits (debounced): sends due emails until none are left or
    the time budget is spent, then hands the rest to a fresh task."""
    claimed, more = emails_deliver_due(budget_seconds=conf.task_time_budget_seconds())
    if more:
        EMAIL_QUEUE.publish()
    return claimed


@shared_task(name="messaging.sweep_emails", ignore_result=True)
def sweep_emails() -> int:
    """The safety net on beat: emails no wake-up reached, retries that came due, and
    expired leases of dead workers."""
    claimed, more = emails_deliver_due(budget_seconds=conf.task_time_budget_seconds())
    if more:
        EMAIL_QUEUE.publish()
    if claimed:
        logger.info("Email sweep claimed %d deliveries", claimed)
    return claimed


@shared_task(name="messaging.purge_esp_receipts", ignore_result=True)
def purge_esp_receipts() -> int:
    """Deletes receipts of ESP events older than any ESP resends them."""
    deleted = esp_event_receipts_purge()
    if deleted:
        logger.info("Purged %d ESP event receipts", deleted)
    return deleted


@shared_task(name="messaging.fan_out_campaigns", ignore_result=True)
def fan_out_campaigns() -> int:
    """Woken when a campaign starts sending (debounced): works due fan-out batches until
    none are left or the time budget is spent, then hands the rest to a fresh task."""
    claimed, more = campaign_fanout_due(budget_seconds=conf.fanout_task_time_budget_seconds())
    if more:
        CAMPAIGN_FANOUT_QUEUE.publish()
    return claimed


@shared_task(name="messaging.start_scheduled_campaigns", ignore_result=True)
def start_scheduled_campaigns() -> int:
    """On beat: starts the scheduled campaigns whose time has come."""
    return campaigns_start_due()


@shared_task(name="messaging.sweep_campaigns", ignore_result=True)
def sweep_campaigns() -> int:
    """The safety net on beat: fan-out batches no wake-up reached (or whose worker died),
    and sending campaigns whose last worker stopped before marking them sent."""
    claimed, more = campaign_fanout_due(budget_seconds=conf.fanout_task_time_budget_seconds())
    if more:
        CAMPAIGN_FANOUT_QUEUE.publish()
    finished = campaigns_finish_stale()
    if claimed or finished:
        logger.info("Campaign sweep claimed %d batches, finished %d campaigns", claimed, finished)
    return claimed
