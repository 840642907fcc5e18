"""Run workers. The runs' jobs table is the queue: these tasks only say "look now"."""

import logging

from celery import shared_task

from automations.conf import task_time_budget_seconds
from automations.queue import RUN_QUEUE
from automations.services.advance import runs_advance_due
from automations.services.retention import runs_purge_expired

logger = logging.getLogger(__name__)


@shared_task(name="automations.advance_runs", ignore_result=True)
def advance_runs() -> int:
    """Woken after a trigger or a matched wait commits (debounced): advances due runs
    until none are left or the time budget is spent, then hands the rest on."""
    claimed, more = runs_advance_due(budget_seconds=task_time_budget_seconds())
    if more:
        RUN_QUEUE.publish()
    return claimed


@shared_task(name="automations.sweep_runs", ignore_result=True)
def sweep_runs() -> int:
    """On beat: runs whose wait reached its deadline (the due index holds the deadlines),
    wake-ups that were lost, retries that came due and jobs of workers that died."""
    claimed, more = runs_advance_due(budget_seconds=task_time_budget_seconds())
    if more:
        RUN_QUEUE.publish()
    if claimed:
        logger.info("Run sweep advanced %d runs", claimed)
    return claimed


@shared_task(name="automations.purge_expired", ignore_result=True)
def purge_expired() -> int:
    """Deletes finished runs and resolved waits past their project's retention."""
    deleted = runs_purge_expired()
    if deleted:
        logger.info("Deleted %d runs and waits past retention", deleted)
    return deleted
