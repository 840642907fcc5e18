"""Reads of campaigns: the project's campaigns of one channel, who a campaign reaches,
and its stats. Soft-deleted campaigns are invisible."""

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Q,
    QuerySet,
    Value,
)

from contacts.audiences.selectors import audience_member_contacts
from contacts.models import Contact
from contacts.topics.selectors import topic_audience
from messaging.hooks import push_campaign_progress
from messaging.models import (
    Campaign,
    CampaignRecipient,
    CampaignStatus,
    Channel,
    Email,
    EmailStatus,
    RecipientStatus,
    Suppression,
)
from tenancy.models import Project

STAT_NAMES = ("queued", "sent", "delivered", "failed", "suppressed", "opened", "clicked")


def campaign_list(
    *, project: Project, channel: str, status: str | None = None
) -> QuerySet[Campaign]:
    """The project's campaigns of `channel` (optionally of one status)."""
    campaigns = Campaign.objects.filter(project=project, channel=channel, deleted_at__isnull=True)
    if status is not None:
        campaigns = campaigns.filter(status=status)
    return campaigns


def campaign_get(
    *,
    project: Project,
    channel: str,
    campaign_id: uuid.UUID | str,
    deleted_too: bool = False,
) -> Campaign | None:
    """A campaign of the project and channel; None when unknown, deleted (unless
    `deleted_too`), of another project or of the other channel."""
    campaigns = Campaign.objects.filter(project=project, channel=channel, id=campaign_id)
    if not deleted_too:
        campaigns = campaigns.filter(deleted_at__isnull=True)
    return campaigns.first()


# --- who a campaign reaches ---------------------------------------------------------------


def campaign_candidates(
    campaign: Campaign, *, after: uuid.UUID | None = None, upto: uuid.UUID | None = None
) -> QuerySet[Contact] | None:
    """The contacts the campaign concerns, each annotated `topic_subscribed` (always true
    for an audience); with `after` and `upto`, only ids in (after, upto] (a fan-out
    batch). None when it has no audience or topic (one was deleted)."""
    if campaign.audience is not None:
        return audience_member_contacts(
            audience=campaign.audience, after=after, upto=upto
        ).annotate(topic_subscribed=Value(True, output_field=BooleanField()))
    if campaign.topic is not None:
        return topic_audience(topic=campaign.topic, after=after, upto=upto)
    return None


@dataclass(frozen=True)
class AudienceCounts:
    """Who a send would reach now: `recipients` get a message, `suppressed` are skipped
    (unsubscribed from the topic; for email also suppressed addresses and contacts
    without one)."""

    recipients: int
    suppressed: int


def campaign_audience_counts(campaign: Campaign) -> AudienceCounts:
    """The counts as a send started now would find them (one query)."""
    candidates = campaign_candidates(campaign)
    if candidates is None:
        return AudienceCounts(recipients=0, suppressed=0)
    if campaign.channel == Channel.EMAIL:
        listed = Suppression.objects.filter(project_id=campaign.project_id, email=OuterRef("email"))
        unreachable: Any = ExpressionWrapper(
            Q(email__isnull=True) | Q(Exists(listed)), output_field=BooleanField()
        )
    else:
        unreachable = Value(False, output_field=BooleanField())
    rows = candidates.annotate(unreachable=unreachable).order_by()
    sql, params = rows.values("id", "topic_subscribed", "unreachable").query.sql_with_params()
    # Counted around the rows' query: the ORM's aggregate over these annotations loses
    # the outer reference of the suppression check.
    with connection.cursor() as cursor:
        cursor.execute(
            # S608: the ORM's own SQL.
            "SELECT count(*) FILTER (WHERE topic_subscribed AND NOT unreachable), "  # noqa: S608
            "count(*) FILTER (WHERE NOT topic_subscribed OR unreachable) "
            f"FROM ({sql}) AS candidates",
            params,
        )
        recipients, suppressed = cursor.fetchone()
    return AudienceCounts(recipients=recipients, suppressed=suppressed)


# --- progress -----------------------------------------------------------------------------


def campaigns_canceled_among(*, campaign_ids: Collection[Any]) -> set[Any]:
    """The campaigns of `campaign_ids` that were canceled (their queued messages stay unsent)."""
    wanted = {pk for pk in campaign_ids if pk is not None}
    if not wanted:
        return set()
    return set(
        Campaign.objects.filter(pk__in=wanted, status=CampaignStatus.CANCELED).values_list(
            "pk", flat=True
        )
    )


def _empty_stats() -> dict[str, int]:
    return dict.fromkeys(STAT_NAMES, 0)


def campaign_stats(*, campaigns: Sequence[Campaign]) -> dict[Any, dict[str, int]]:
    """`stats` of each campaign: every recipient counted once, by what became of its
    message (`queued`, `sent`, `delivered`, `failed`) or as `suppressed` (skipped);
    `opened` and `clicked` count messages among the sent ones. A bounced email counts as
    failed, a complaint as delivered. One grouped query per table for the whole page."""
    stats = {campaign.pk: _empty_stats() for campaign in campaigns}
    started = [campaign for campaign in campaigns if campaign.started_at is not None]
    if not started:
        return stats
    skipped = (
        CampaignRecipient.objects.filter(
            campaign_id__in=[campaign.pk for campaign in started],
            status=RecipientStatus.SUPPRESSED,
        )
        .values("campaign_id")
        .annotate(count=Count("id"))
        .order_by()
    )
    for row in skipped:
        stats[row["campaign_id"]]["suppressed"] += row["count"]
    emailed = [campaign.pk for campaign in started if campaign.channel == Channel.EMAIL]
    if emailed:
        rows = (
            Email.objects.filter(campaign_id__in=emailed)
            .values("campaign_id")
            .annotate(
                queued=Count("pk", filter=Q(status=EmailStatus.QUEUED)),
                sent=Count("pk", filter=Q(status=EmailStatus.SENT)),
                delivered=Count(
                    "pk", filter=Q(status__in=[EmailStatus.DELIVERED, EmailStatus.COMPLAINED])
                ),
                failed=Count("pk", filter=Q(status__in=[EmailStatus.FAILED, EmailStatus.BOUNCED])),
                suppressed=Count("pk", filter=Q(status=EmailStatus.SUPPRESSED)),
                opened=Count("pk", filter=Q(opened_at__isnull=False)),
                clicked=Count("pk", filter=Q(clicked_at__isnull=False)),
            )
            .order_by()
        )
        for row in rows:
            entry = stats[row.pop("campaign_id")]
            for name, count in row.items():
                entry[name] += count
    pushed = [campaign.pk for campaign in started if campaign.channel == Channel.PUSH]
    reader = push_campaign_progress()
    if pushed and reader is not None:
        for campaign_id, progress in reader(campaign_ids=pushed).items():
            entry = stats[campaign_id]
            entry["queued"] += progress.queued
            entry["sent"] += progress.sent
            entry["failed"] += progress.failed
            entry["opened"] += progress.opened
    return stats


def with_stats(campaigns: Sequence[Campaign]) -> list[Campaign]:
    """The campaigns, each with `stats` set (what every campaign answer shows)."""
    stats = campaign_stats(campaigns=campaigns)
    for campaign in campaigns:
        # Computed per answer, not a column: an attribute Campaign does not declare.
        campaign.stats = stats[campaign.pk]  # type: ignore[attr-defined]
    return list(campaigns)
