"""Reads behind a campaign's console page: its funnel (who it reached and what became of
the messages) and whether its sender's domain is verified."""

from dataclasses import dataclass
from email.utils import parseaddr

from django.db.models import Count, Q

from messaging.models import (
    Campaign,
    CampaignRecipient,
    Channel,
    Domain,
    DomainStatus,
    Email,
    EmailStatus,
    RecipientStatus,
    SkipReason,
)
from messaging.selectors.campaigns import campaign_stats


@dataclass(frozen=True)
class Funnel:
    """A campaign's funnel: each stage with its count, in order; `extra` are the side
    exits (bounced, complained, skipped) that exist for its channel."""

    stages: list[tuple[str, int]]
    extra: list[tuple[str, int]]


def sender_domain(sender: str | None) -> str | None:
    """The domain of `a@b.c` or `Name <a@b.c>`, lower case; None without one."""
    address = parseaddr(sender or "")[1]
    if "@" not in address:
        return None
    return address.rsplit("@", 1)[1].lower().rstrip(".") or None


def domain_verified(*, campaign: Campaign, sender: str | None) -> bool:
    """Whether the sender's domain is one of the campaign's project's verified domains
    (one lookup by `domain_one_per_name`)."""
    name = sender_domain(sender)
    if name is None:
        return False
    return Domain.objects.filter(
        project_id=campaign.project_id, name=name, status=DomainStatus.VERIFIED
    ).exists()


def campaign_funnel(campaign: Campaign) -> Funnel:
    """Recipients, sent, delivered, opened, clicked, and the side exits. Email campaigns:
    one count of the campaign's emails (by `email_campaign_status_idx`, within the
    campaign) and one of its skipped recipients (by `campaign_recipient_one_per_contact`);
    push campaigns: the stats the push family reports. A campaign that never started
    costs no query."""
    if campaign.started_at is None:
        return Funnel(stages=[("Recipients", 0), ("Sent", 0)], extra=[])
    skipped = {
        row["reason"]: row["count"]
        for row in CampaignRecipient.objects.filter(
            campaign=campaign, status=RecipientStatus.SUPPRESSED
        )
        .values("reason")
        .annotate(count=Count("id"))
        .order_by()
    }
    skipped_total = sum(skipped.values())
    extra = [
        (f"Skipped: {SkipReason(reason).label.lower()}", count)
        for reason, count in sorted(skipped.items())
        if reason in SkipReason.values
    ]
    if campaign.channel == Channel.PUSH:
        stats = campaign_stats(campaigns=[campaign])[campaign.pk]
        total = stats["queued"] + stats["sent"] + stats["failed"] + skipped_total
        stages = [
            ("Recipients", total),
            ("Sent", stats["sent"]),
            ("Opened", stats["opened"]),
        ]
        return Funnel(stages=stages, extra=[("Failed", stats["failed"]), *extra])
    counts = Email.objects.filter(campaign=campaign).aggregate(
        total=Count("pk"),
        left=Count("pk", filter=~Q(status__in=[EmailStatus.QUEUED, EmailStatus.SUPPRESSED])),
        failed=Count("pk", filter=Q(status=EmailStatus.FAILED)),
        bounced=Count("pk", filter=Q(status=EmailStatus.BOUNCED)),
        complained=Count("pk", filter=Q(status=EmailStatus.COMPLAINED)),
        suppressed=Count("pk", filter=Q(status=EmailStatus.SUPPRESSED)),
        # As the campaign's stats count them: a complaint was delivered first.
        delivered=Count("pk", filter=Q(status__in=[EmailStatus.DELIVERED, EmailStatus.COMPLAINED])),
        opened=Count("pk", filter=Q(opened_at__isnull=False)),
        clicked=Count("pk", filter=Q(clicked_at__isnull=False)),
    )
    sent = counts["left"] - counts["failed"]
    stages = [
        ("Recipients", counts["total"] + skipped_total),
        ("Sent", sent),
        ("Delivered", counts["delivered"]),
        ("Opened", counts["opened"]),
        ("Clicked", counts["clicked"]),
    ]
    extra = [
        ("Bounced", counts["bounced"]),
        ("Complained", counts["complained"]),
        ("Failed", counts["failed"]),
        ("Suppressed at sending", counts["suppressed"]),
        *extra,
    ]
    return Funnel(stages=stages, extra=extra)
