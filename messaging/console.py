"""Campaigns awaiting review on the staff console's dashboard (config.registries.console)."""

from typing import Any

from django.urls import reverse
from django.utils.timesince import timesince

from config.registries.console import DashboardRow, DashboardSection
from config.runtime import clock
from messaging.models.campaigns import CampaignAwaitingReview, CampaignStatus

SHOWN = 10


def campaigns_awaiting_review(request: Any) -> DashboardSection | None:
    """The longest-waiting campaigns in review (one query, by the review index), for
    staff who may see them."""
    if not request.user.has_perm("messaging.view_campaignawaitingreview"):
        return None
    campaigns = (
        CampaignAwaitingReview.objects.filter(status=CampaignStatus.IN_REVIEW)
        .select_related("project")
        .order_by("submitted_at", "id")[:SHOWN]
    )
    now = clock.now()
    rows = [
        DashboardRow(
            label=campaign.name,
            url=reverse("admin:messaging_campaignawaitingreview_change", args=[campaign.pk]),
            detail=(
                f"{campaign.channel} · {campaign.project.name} · waiting "
                f"{timesince(campaign.submitted_at, now) if campaign.submitted_at else '—'}"
            ),
        )
        for campaign in campaigns
    ]
    return DashboardSection(
        title="Campaigns awaiting review", rows=rows, empty="No campaign is waiting for review."
    )
