"""What a campaign's console page adds to its fields: the checklist a reviewer reads
before approving (recipients now, suppressed, the template version approval freezes, the
sender and whether its domain is verified), the funnel of a campaign that started, and the
one approve and reject that both the page's buttons and the changelist actions go
through, so the two paths check the same permission, call the same services and say the
same things."""

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from config.api.errors import ServiceError
from config.console.charts import funnel_chart
from messaging.models import Campaign, CampaignStatus, Channel
from messaging.selectors.campaign_review import campaign_funnel, domain_verified
from messaging.selectors.campaigns import AudienceCounts, campaign_audience_counts
from messaging.selectors.templates import template_version_published
from messaging.services.campaigns import (
    campaign_approve,
    campaign_readiness_issues,
    campaign_reject,
)

APPROVE_PERMISSION = "messaging.approve_campaign"


def user_id_of(request: HttpRequest) -> int:
    # The console runs for a logged-in staff user only: pk is None only for
    # AnonymousUser, which the admin never lets through.
    return int(request.user.pk)  # type: ignore[arg-type]


def error_text(error: ServiceError) -> str:
    issues = "; ".join(issue.message for issue in error.issues)
    return f"{error.message} {issues}".strip()


def approve_one(
    model_admin: ModelAdmin, request: HttpRequest, campaign: Campaign, *, shown: int | None = None
) -> bool:
    """Approves `campaign` for the staff member (the caller checked the permission) and
    says how it went; `shown` is the recipient count the page showed, reported when the
    count at approval differs."""
    try:
        approved = campaign_approve(campaign_id=campaign.pk, user_id=user_id_of(request))
    except ServiceError as error:
        model_admin.message_user(
            request, f"“{campaign}” was not approved: {error_text(error)}", messages.ERROR
        )
        return False
    model_admin.message_user(
        request,
        f"Approved “{approved}” for {approved.recipient_count} recipient(s).",
        messages.SUCCESS,
    )
    if shown is not None and shown != approved.recipient_count:
        model_admin.message_user(
            request,
            f"The recipient count changed while the page was open: {shown} shown, "
            f"{approved.recipient_count} at approval (frozen on the campaign).",
            messages.WARNING,
        )
    return True


def reject_one(
    model_admin: ModelAdmin, request: HttpRequest, campaign: Campaign, *, reason: str
) -> bool:
    """Rejects `campaign` back to draft with `reason` as its review note (the caller
    checked the permission and that there is a reason) and says how it went."""
    try:
        campaign_reject(campaign_id=campaign.pk, user_id=user_id_of(request), reason=reason)
    except ServiceError as error:
        model_admin.message_user(
            request, f"“{campaign}” was not rejected: {error_text(error)}", messages.ERROR
        )
        return False
    model_admin.message_user(request, f"Rejected “{campaign}” back to draft.", messages.SUCCESS)
    return True


# --- the checklist ------------------------------------------------------------------------

_COUNTS = "_console_audience_counts"


def audience_counts(campaign: Campaign) -> AudienceCounts:
    """Who a send would reach now, counted once per page: kept on the instance, which
    the review box and the recipients field share."""
    counts = campaign.__dict__.get(_COUNTS)
    if counts is None:
        counts = campaign.__dict__[_COUNTS] = campaign_audience_counts(campaign)
    return counts


@dataclass(frozen=True)
class Check:
    """One line of the checklist: `ok` True (fine), False (a problem) or None (to know)."""

    key: str
    label: str
    value: str
    ok: bool | None = None


def campaign_sender(campaign: Campaign) -> str | None:
    """The sender an email campaign would use now: its own, its template's, else the
    project's default (as submitting and approving resolve it)."""
    return campaign.from_email or campaign.template.from_email or campaign.project.default_from


@dataclass(frozen=True)
class Review:
    checklist: list[Check]
    recipients: int


def review_of(campaign: Campaign) -> Review:
    """The checklist of a campaign in review: what approval would freeze and what could
    go wrong."""
    counts = audience_counts(campaign)
    checklist = [
        Check(
            "recipients",
            "Recipients now",
            f"{counts.recipients} (frozen at approval; contacts added later are reached too)",
            counts.recipients > 0,
        ),
        Check("suppressed", "Suppressed or unsubscribed (skipped)", str(counts.suppressed)),
    ]
    version = template_version_published(template=campaign.template)
    checklist.append(
        Check(
            "template_version",
            "Template version approval freezes",
            f"version {version.version_number} of “{campaign.template.name}”"
            if version is not None
            else "none: the template has no published version",
            version is not None,
        )
    )
    if campaign.channel == Channel.EMAIL:
        sender = campaign_sender(campaign)
        verified = domain_verified(campaign=campaign, sender=sender)
        checklist.append(Check("sender", "Sender", sender or "none", bool(sender)))
        checklist.append(
            Check(
                "sender_domain",
                "Sender domain verified",
                "yes" if verified else "no: its mail may be refused or land in spam",
                verified,
            )
        )
    for issue in campaign_readiness_issues(campaign):
        checklist.append(Check(f"issue-{issue.path}", "Not ready", issue.message, False))
    return Review(checklist=checklist, recipients=counts.recipients)


def review_context(
    model_admin: ModelAdmin, request: HttpRequest, campaign: Campaign, *, urls: dict[str, str]
) -> dict[str, Any] | None:
    """The change page's review box: the checklist of a campaign in review, and the
    buttons for staff who may approve."""
    if campaign.status != CampaignStatus.IN_REVIEW or campaign.deleted_at is not None:
        return None
    review = review_of(campaign)
    may_decide = bool(request.user.has_perm(APPROVE_PERMISSION))
    return {
        "checklist": review.checklist,
        "recipients": review.recipients,
        "may_decide": may_decide,
        **(urls if may_decide else {}),
    }


# --- the funnel ---------------------------------------------------------------------------


def funnel_html(campaign: Campaign) -> SafeString | str:
    """The campaign's funnel as a chart, with the side exits as figures."""
    if campaign.started_at is None:
        return "Not sent yet."
    funnel = campaign_funnel(campaign)
    chart = funnel_chart(title=f"Funnel of “{campaign.name}”", stages=funnel.stages)
    figures = format_html_join(
        "",
        '<tr class="figure" data-figure="{}"><th>{}</th><td>{}</td></tr>',
        ((label, label, count) for label, count in [*funnel.stages, *funnel.extra]),
    )
    return format_html(
        '<div class="campaign-funnel">{}</div><table class="campaign-figures">{}</table>',
        chart,
        figures,
    )
