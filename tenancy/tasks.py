"""Periodic work of the tenancy family."""

from celery import shared_task

from tenancy.usage_days import usage_fold


@shared_task(name="tenancy.fold_usage", ignore_result=True)
def fold_usage() -> int:
    """Folds the live usage counters into the per-day rows."""
    return usage_fold()
