"""The end of a send: a campaign is `sent` once its fan-out has finished and none of its
messages is queued any more. Checked after every fan-out batch and every delivery batch
that touched a campaign (after their commit), and by the beat sweep as a safety net."""

import logging
import uuid
from collections.abc import Collection
from typing import Any

from django.db.models import Exists, OuterRef

from config.runtime import clock
from config.workqueue.models import WorkStatus
from messaging.hooks import push_campaign_progress
from messaging.models import (
    Campaign,
    CampaignFanout,
    CampaignStatus,
    Channel,
    Email,
    EmailStatus,
)

logger = logging.getLogger(__name__)

# Sending campaigns the sweep looks at per run, oldest first.
SWEEP_LIMIT = 200


def campaigns_finish(*, campaign_ids: Collection[Any]) -> int:
    """Marks `sent` the campaigns of `campaign_ids` that are `sending`, whose fan-out is
    done and whose messages have all left the queue; returns how many.

    Run after the caller's writes committed: of two workers finishing the last messages
    of one campaign, the later one sees both. One conditional UPDATE, so a campaign
    finishes once, and a cancel that came first wins."""
    wanted = {pk for pk in campaign_ids if pk is not None}
    if not wanted:
        return 0
    unfinished_batches = CampaignFanout.objects.filter(campaign=OuterRef("pk")).exclude(
        status=WorkStatus.PROCESSED
    )
    queued_emails = Email.objects.filter(campaign=OuterRef("pk"), status=EmailStatus.QUEUED)
    candidates = (
        Campaign.objects.filter(pk__in=wanted, status=CampaignStatus.SENDING)
        .exclude(Exists(unfinished_batches))
        .exclude(Exists(queued_emails))
    )
    # One read in the common case (a send still under way: nothing is ready).
    ready = dict(candidates.values_list("pk", "channel"))
    push_ids = {pk for pk, channel in ready.items() if channel == Channel.PUSH}
    if push_ids:
        reader = push_campaign_progress()
        progress = reader(campaign_ids=push_ids) if reader is not None else {}
        for pk in push_ids:
            if reader is None or (pk in progress and progress[pk].queued):
                del ready[pk]
    if not ready:
        return 0
    now = clock.now()
    # The conditions again: the update is what decides, once, against a cancel.
    finished = candidates.filter(pk__in=list(ready)).update(
        status=CampaignStatus.SENT, sent_at=now, updated_at=now
    )
    if finished:
        logger.info("%d campaign(s) finished sending", finished)
    return finished


def campaigns_finish_stale(*, limit: int = SWEEP_LIMIT) -> int:
    """The sweep's share: sending campaigns whose last worker stopped before its check."""
    sending: list[uuid.UUID] = list(
        Campaign.objects.filter(status=CampaignStatus.SENDING)
        .order_by("started_at")
        .values_list("pk", flat=True)[:limit]
    )
    return campaigns_finish(campaign_ids=sending)
