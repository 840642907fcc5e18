"""Sending an approved campaign: what a send would do (the effects a prepared action
shows), the send itself (now, or `scheduled` until its time), and the beat task's start
of scheduled campaigns that came due. The messages are made by the fan-out
(messaging/services/campaign_fanout.py)."""

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from config.api.errors import Issue, NotFound
from config.runtime import clock
from messaging.errors import CampaignNotReady, CampaignTransitionNotAllowed
from messaging.hooks import push_campaign_sender
from messaging.models import Campaign, CampaignStatus, Channel
from messaging.selectors.campaigns import campaign_audience_counts
from messaging.services.campaign_fanout import campaign_fanout_plan
from messaging.services.campaigns import Actor, campaign_history_record
from messaging.services.emails import address_problem
from tenancy.models import Project

logger = logging.getLogger(__name__)

# Scheduled campaigns one run of the beat task starts, each in its own transaction.
START_LIMIT = 20


def _campaigns(project: Project, channel: str | None) -> Any:
    campaigns = Campaign.objects.select_related("project", "template", "template_version")
    campaigns = campaigns.filter(project=project, deleted_at__isnull=True)
    return campaigns.filter(channel=channel) if channel is not None else campaigns


def _send_issues(campaign: Campaign) -> list[Issue]:
    """What keeps an approved campaign from sending now."""
    issues = []
    if campaign.audience_id is None and campaign.topic_id is None:
        issues.append(
            Issue("required", "audience_id", "The campaign's audience or topic was deleted.")
        )
    if campaign.channel == Channel.PUSH and push_campaign_sender() is None:
        issues.append(Issue("unavailable", "app_id", "Push sending is not installed."))
    if campaign.channel == Channel.EMAIL:
        sender = _sender(campaign)
        if not sender or address_problem(sender):
            issues.append(
                Issue(
                    "required",
                    "from",
                    "No valid sender: the campaign, its template and the project's "
                    "`default_from` give none.",
                )
            )
    return issues


def _sender(campaign: Campaign) -> str:
    return (
        campaign.from_email or campaign.template.from_email or campaign.project.default_from or ""
    )


def _starts_now(campaign: Campaign) -> bool:
    return campaign.scheduled_at is None or campaign.scheduled_at <= clock.now()


def _sendable(campaign: Campaign | None) -> Campaign:
    if campaign is None:
        raise NotFound("No such campaign.")
    if campaign.status != CampaignStatus.APPROVED:
        raise CampaignTransitionNotAllowed(action="send", status=campaign.status)
    issues = _send_issues(campaign)
    if issues:
        raise CampaignNotReady(issues, "The campaign cannot be sent as it stands.")
    return campaign


def campaign_send_effects(
    *, project: Project, campaign_id: uuid.UUID | str, channel: str | None = None
) -> dict[str, Any]:
    """What sending would do now, checked as the send checks it (404, 409):
    `recipients` (who would get a message), `suppressed` (who would be skipped), the
    `channel`, the frozen `template_version_id`, and `scheduled_at` (null: at once)."""
    campaign = _sendable(_campaigns(project, channel).filter(pk=campaign_id).first())
    counts = campaign_audience_counts(campaign)
    return {
        "recipients": counts.recipients,
        "suppressed": counts.suppressed,
        "channel": campaign.channel,
        "template_version_id": str(campaign.template_version_id),
        "scheduled_at": (
            clock.iso_utc(campaign.scheduled_at)
            if campaign.scheduled_at is not None and not _starts_now(campaign)
            else None
        ),
    }


def _start(campaign: Campaign, *, from_status: str) -> int:
    """Makes the campaign `sending` (conditional on `from_status`) and plans its fan-out."""
    now = clock.now()
    updated = Campaign.objects.filter(pk=campaign.pk, status=from_status).update(
        status=CampaignStatus.SENDING, started_at=now, sender=_sender(campaign), updated_at=now
    )
    if not updated:
        return 0
    campaign.status, campaign.started_at = CampaignStatus.SENDING, now
    campaign.sender = _sender(campaign)
    return campaign_fanout_plan(campaign=campaign)


def campaign_send(
    *,
    project: Project,
    campaign_id: uuid.UUID | str,
    actor: Actor,
    channel: str | None = None,
    prepared: Mapping[str, Any] | None = None,
) -> Campaign:
    """Sends an approved campaign: at once (`sending`, its fan-out planned and the workers
    woken after commit), or `scheduled` until its `scheduled_at`. Anything but approved:
    409. A prepared send (`prepared`, its effects) must still name the frozen version."""
    with transaction.atomic():
        campaign = _sendable(
            _campaigns(project, channel)
            .select_for_update(of=("self",))
            .filter(pk=campaign_id)
            .first()
        )
        if prepared is not None and prepared.get("template_version_id") != str(
            campaign.template_version_id
        ):
            raise CampaignNotReady(
                [Issue("changed", "template_version_id", "The approved version changed.")],
                "The campaign changed since the send was prepared; prepare it again.",
            )
        if _starts_now(campaign):
            batches = _start(campaign, from_status=CampaignStatus.APPROVED)
            message = f"Sending started ({batches} fan-out batch(es))"
        else:
            assert campaign.scheduled_at is not None
            Campaign.objects.filter(pk=campaign.pk, status=CampaignStatus.APPROVED).update(
                status=CampaignStatus.SCHEDULED, updated_at=clock.now()
            )
            message = f"Scheduled for {clock.iso_utc(campaign.scheduled_at)}"
        campaign.refresh_from_db()
        campaign_history_record(campaign=campaign, actor=actor, message=message)
    return campaign


def campaigns_start_due(*, limit: int = START_LIMIT) -> int:
    """Starts scheduled campaigns whose time has come, each claimed under its row lock
    (SKIP LOCKED: two schedulers never start one twice); returns how many started."""
    started = 0
    for _ in range(limit):
        with transaction.atomic():
            campaign = (
                Campaign.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("project", "template", "template_version")
                .filter(
                    status=CampaignStatus.SCHEDULED,
                    scheduled_at__lte=clock.now(),
                    deleted_at__isnull=True,
                )
                .order_by("scheduled_at")
                .first()
            )
            if campaign is None:
                break
            batches = _start(campaign, from_status=CampaignStatus.SCHEDULED)
            campaign_history_record(
                campaign=campaign,
                actor=Actor(),
                message=f"Scheduled send started ({batches} fan-out batch(es))",
            )
            started += 1
    if started:
        logger.info("Started %d scheduled campaign(s)", started)
    return started
