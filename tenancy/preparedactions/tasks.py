"""Periodic upkeep of prepared actions."""

import logging

from celery import shared_task

from tenancy.preparedactions.services import prepared_actions_expire

logger = logging.getLogger(__name__)


@shared_task(name="preparedactions.expire", ignore_result=True)
def expire_prepared_actions() -> int:
    count = prepared_actions_expire()
    if count:
        logger.info("Expired %d prepared actions", count)
    return count
