"""Event workers. The events table is the queue: these tasks only say "look now"."""

import logging

from celery import shared_task

from events.conf import task_time_budget_seconds
from events.queue import EVENT_QUEUE
from events.services.catalog import event_types_record_backlog
from events.services.processing import events_process_due
from events.services.retention import events_purge_expired

logger = logging.getLogger(__name__)


@shared_task(name="events.process_batch", ignore_result=True)
def process_batch() -> int:
    """Woken after ingest commits (debounced): claims and processes due events until none
    are left or the time budget is spent, then hands the rest to a fresh task."""
    claimed, more = events_process_due(budget_seconds=task_time_budget_seconds())
    if more:
        EVENT_QUEUE.publish()
    return claimed


@shared_task(name="events.sweep", ignore_result=True)
def sweep() -> int:
    """The safety net on beat: finds accepted events no wake-up reached (broker outage),
    retries that came due, expired leases of dead workers, and uncounted catalog rows."""
    event_types_record_backlog()
    claimed, more = events_process_due(budget_seconds=task_time_budget_seconds())
    if more:
        EVENT_QUEUE.publish()
    if claimed:
        logger.info("Event sweep claimed %d events", claimed)
    return claimed


@shared_task(name="events.purge_expired", ignore_result=True)
def purge_expired() -> int:
    """Deletes events past their project's retention, a bounded amount per run."""
    deleted = events_purge_expired()
    if deleted:
        logger.info("Deleted %d events past retention", deleted)
    return deleted
