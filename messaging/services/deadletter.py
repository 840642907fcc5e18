"""The email dead-letter queue: deliveries whose retries ran out, until staff requeue them."""

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from config.workqueue.models import WorkStatus
from messaging.models import Email, EmailDelivery, EmailStatus
from messaging.queue import EMAIL_QUEUE


def email_deliveries_requeue(*, ids: Iterable[Any]) -> int:
    """Gives dead-lettered deliveries a fresh set of attempts and puts their emails back to
    `queued` with `last_error` cleared; returns how many. Others are left alone, and so is
    a delivery whose email is no longer `failed`, so nothing is sent twice. The delivery
    keeps its last error until an attempt succeeds."""
    with transaction.atomic():
        dead = list(
            EmailDelivery.objects.select_for_update()
            .filter(
                pk__in=list(ids),
                status=WorkStatus.DEAD_LETTERED,
                email__status=EmailStatus.FAILED,
            )
            .values_list("pk", flat=True)
        )
        if not dead:
            return 0
        Email.objects.filter(pk__in=dead, status=EmailStatus.FAILED).update(
            status=EmailStatus.QUEUED, last_error=None
        )
        # Wakes the delivery workers once this commits.
        return EMAIL_QUEUE.requeue(ids=dead)
