"""Import workers. The chunks table is the queue: these tasks only say "look now"."""

import logging

from celery import shared_task

from imports.conf import task_time_budget_seconds
from imports.services.commit import IMPORT_QUEUE, imports_commit_due

logger = logging.getLogger(__name__)


@shared_task(name="imports.commit_chunks", ignore_result=True)
def commit_chunks() -> int:
    """Woken when a commit starts (debounced): applies due chunks until none are left or
    the time budget is spent, then hands the rest to a fresh task."""
    claimed, more = imports_commit_due(budget_seconds=task_time_budget_seconds())
    if more:
        IMPORT_QUEUE.publish()
    return claimed


@shared_task(name="imports.sweep", ignore_result=True)
def sweep() -> int:
    """The safety net on beat: chunks no wake-up reached, retries that came due, and
    expired leases of dead workers."""
    claimed, more = imports_commit_due(budget_seconds=task_time_budget_seconds())
    if more:
        IMPORT_QUEUE.publish()
    if claimed:
        logger.info("Import sweep claimed %d chunks", claimed)
    return claimed
