"""The messaging family's sections of the staff console's dashboard
(config.registries.console): campaigns awaiting review, and the last 30 days of email
sending and deliverability."""

import datetime as dt
from typing import Any

from django.urls import reverse
from django.utils.timesince import timesince

from config.console.charts import Series, line_chart
from config.registries.console import DashboardRow, DashboardSection
from config.runtime import clock
from messaging.models import DELIVERY_FIGURES, Channel
from messaging.models.campaigns import CampaignAwaitingReview, CampaignStatus
from messaging.selectors.delivery_days import delivery_days_totals

SHOWN = 10
DAYS = 30


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


def email_deliverability(request: Any) -> DashboardSection | None:
    """Emails sent, delivered, bounced, complained about, opened and clicked per day over
    the last 30 days (UTC), every project together, from the daily figures (one query),
    for staff who may see emails."""
    if not request.user.has_perm("messaging.view_email"):
        return None
    last = clock.now().astimezone(dt.UTC).date()
    days = delivery_days_totals(
        first=last - dt.timedelta(days=DAYS - 1), last=last, channel=Channel.EMAIL
    )
    labels = [day.strftime("%m-%d") for day in days]
    series = [
        Series(figure.capitalize(), [figures[figure] for figures in days.values()])
        for figure in DELIVERY_FIGURES
    ]
    chart = line_chart(
        title=f"Emails per day, last {DAYS} days (UTC)", labels=labels, series=series, unit="emails"
    )
    sent = sum(figures["sent"] for figures in days.values())
    rows = [
        DashboardRow(
            label=line.name,
            detail=f"{sum(line.values):,.0f} in {DAYS} days"
            + (f" ({sum(line.values) / sent:.1%} of sent)" if sent and line.name != "Sent" else ""),
        )
        for line in series
    ]
    return DashboardSection(
        title=f"Email sending and deliverability, last {DAYS} days", rows=rows, chart=chart
    )
