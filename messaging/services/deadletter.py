"""The email dead-letter queue: deliveries whose retries ran out, until staff requeue them."""

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from config.workqueue.models import WorkStatus
from messaging.models import Email, EmailDelivery, EmailStatus
from messaging.queue import EMAIL_QUEUE
from messaging.selectors.emails import emails_in_their_partitions


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
        failed = Email.objects.filter(status=EmailStatus.FAILED)
        # In the emails' partitions, then by id alone for any an id's time did not find.
        if emails_in_their_partitions(failed, dead).update(
            status=EmailStatus.QUEUED, last_error=None
        ) < len(dead):
            failed.filter(pk__in=dead).update(status=EmailStatus.QUEUED, last_error=None)
        # Wakes the delivery workers once this commits.
        return EMAIL_QUEUE.requeue(ids=dead)
