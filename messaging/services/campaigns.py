"""Campaign drafts and their review: create, edit (drafts only), submit, withdraw,
approve or reject (staff, in the console), cancel and delete. Sending is
messaging/services/campaign_sending.py.

    draft --submit--> in_review --approve (staff)--> approved --send--> scheduled | sending
    in_review --withdraw | reject (staff)--> draft         scheduled --(its time)--> sending
    sending --(every message left the queue)--> sent
    every state before sent --cancel--> canceled

Every transition is one conditional UPDATE that matches only the statuses it leaves from
(or runs under the row lock and checks the status there): when nothing matches, the
campaign was in another state and the answer is 409 with nothing changed. Approving,
rejecting, sending and canceling are recorded in the console's history with who did it.
"""

import datetime as dt
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.db import transaction

from config.api.errors import Issue, NotFound, ValidationFailed
from config.db.update import model_update
from config.runtime import clock
from config.workqueue.models import DUE_STATUSES, WorkStatus
from contacts.audiences.models import Audience
from contacts.audiences.selectors import audience_get
from contacts.topics.models import Topic
from contacts.topics.selectors import topic_get
from messaging.errors import CampaignNotReady, CampaignTransitionNotAllowed
from messaging.hooks import push_app_resolver
from messaging.models import (
    CANCELABLE_STATUSES,
    Campaign,
    CampaignFanout,
    CampaignStatus,
    Channel,
    MessageTemplate,
)
from messaging.selectors.campaigns import campaign_audience_counts, campaign_get
from messaging.selectors.templates import template_get, template_version_published
from messaging.services.emails import address_problem
from tenancy.models import Project

# The console user that API and scheduler actions are recorded under in the history
# (the entry names the key); it cannot log in.
API_HISTORY_USERNAME = "api@sendrealm.invalid"


@dataclass(frozen=True)
class Actor:
    """Who acts on a campaign, as the console's history records it: a user (staff in the
    console, or the owner of a personal key), else the integration key's id."""

    user_id: int | None = None
    key_id: str | None = None

    def describe(self) -> str:
        if self.key_id is not None:
            return f" through the API (key {self.key_id})"
        return ""


def _history_user_id(actor: Actor) -> int:
    if actor.user_id is not None:
        return actor.user_id
    user, _ = get_user_model().objects.get_or_create(
        username=API_HISTORY_USERNAME, defaults={"is_active": False}
    )
    return int(user.pk)


def campaign_history_record(*, campaign: Campaign, actor: Actor, message: str) -> None:
    """Adds `message` to the campaign's history in the console (django.contrib.admin's
    LogEntry), in the caller's transaction."""
    LogEntry.objects.log_actions(
        user_id=_history_user_id(actor),
        queryset=[campaign],
        action_flag=CHANGE,
        change_message=f"{message}{actor.describe()}",
        single_object=True,
    )


# --- checks of what a draft names ----------------------------------------------------------


def _template(project: Project, channel: str, template_id: uuid.UUID) -> MessageTemplate:
    template = template_get(project=project, template_id=template_id)
    if template is None:
        raise ValidationFailed.at("template_id", "No such template.", code="not_found")
    if template.channel != channel:
        raise ValidationFailed.at(
            "template_id",
            f"This is a {template.channel} template; {channel} campaigns need a {channel} "
            "template.",
            code="wrong_channel",
        )
    return template


def _audience(project: Project, audience_id: uuid.UUID) -> Audience:
    audience = audience_get(project=project, audience_id=audience_id, with_properties=False)
    if audience is None:
        raise ValidationFailed.at("audience_id", "No such audience.", code="not_found")
    return audience


def _topic(project: Project, topic_id: uuid.UUID) -> Topic:
    topic = topic_get(project=project, topic_id=topic_id)
    if topic is None:
        raise ValidationFailed.at("topic_id", "No such topic.", code="not_found")
    return topic


def _app_id(project: Project, app_ref: str) -> uuid.UUID:
    resolve = push_app_resolver()
    app_id = resolve(project=project, app_ref=app_ref) if resolve is not None else None
    if app_id is None:
        raise ValidationFailed.at("app_id", "No such push app.", code="not_found")
    return app_id


def _sender_checked(value: str | None) -> str | None:
    if value is not None and (problem := address_problem(value)):
        raise ValidationFailed.at("from", problem, code="invalid_email")
    return value


def _schedule_checked(value: dt.datetime | None) -> dt.datetime | None:
    if value is not None and value <= clock.now():
        raise ValidationFailed.at(
            "scheduled_at", "Must be in the future (or null to send at once).", code="in_the_past"
        )
    return value


def _target_checked(values: Mapping[str, Any]) -> None:
    if (values.get("audience_id") is None) == (values.get("topic_id") is None):
        raise ValidationFailed.at(
            "audience_id" if "audience_id" in values else "topic_id",
            "Give exactly one of `audience_id` or `topic_id`.",
            code="audience_or_topic",
        )


# --- drafts -----------------------------------------------------------------------------------


def campaign_create(
    *,
    project: Project,
    channel: str,
    name: str,
    template_id: uuid.UUID,
    audience_id: uuid.UUID | None = None,
    topic_id: uuid.UUID | None = None,
    app_ref: str | None = None,
    from_email: str | None = None,
    scheduled_at: dt.datetime | None = None,
    transactional: bool = False,
) -> Campaign:
    """A new draft of `channel` (a push campaign needs `app_ref`, its app)."""
    _target_checked({"audience_id": audience_id, "topic_id": topic_id})
    template = _template(project, channel, template_id)
    audience = _audience(project, audience_id) if audience_id is not None else None
    topic = _topic(project, topic_id) if topic_id is not None else None
    app_id: uuid.UUID | None = None
    if channel == Channel.PUSH:
        if app_ref is None:
            raise ValidationFailed.at(
                "app_id", "Push campaigns need `app_id` (the push app).", code="required"
            )
        app_id = _app_id(project, app_ref)
    return Campaign.objects.create(
        project=project,
        name=name,
        channel=channel,
        template=template,
        audience=audience,
        topic=topic,
        app_id=app_id,
        from_email=_sender_checked(from_email),
        scheduled_at=_schedule_checked(scheduled_at),
        transactional=transactional,
    )


def _locked(project: Project, channel: str, campaign_id: uuid.UUID | str) -> Campaign:
    campaign = (
        Campaign.objects.select_for_update()
        .filter(project=project, channel=channel, id=campaign_id, deleted_at__isnull=True)
        .first()
    )
    if campaign is None:
        raise NotFound("No such campaign.")
    return campaign


def campaign_update(
    *,
    project: Project,
    channel: str,
    campaign_id: uuid.UUID | str,
    changes: Mapping[str, Any],
) -> Campaign:
    """Edits a draft: `changes` may hold `name`, `template_id`, `audience_id` or
    `topic_id` (naming one clears the other), `app_ref`, `from_email`, `scheduled_at`,
    `transactional`.
    Any other status: 409, nothing changed."""
    with transaction.atomic():
        campaign = _locked(project, channel, campaign_id)
        if campaign.status != CampaignStatus.DRAFT:
            raise CampaignTransitionNotAllowed(action="edit", status=campaign.status)
        fields: dict[str, Any] = {}
        if "name" in changes:
            fields["name"] = changes["name"]
        if "template_id" in changes:
            fields["template"] = _template(project, channel, changes["template_id"])
        if "audience_id" in changes or "topic_id" in changes:
            target = {
                "audience_id": changes.get("audience_id"),
                "topic_id": changes.get("topic_id"),
            }
            _target_checked(target)
            audience_id, topic_id = target["audience_id"], target["topic_id"]
            fields["audience"] = _audience(project, audience_id) if audience_id else None
            fields["topic"] = _topic(project, topic_id) if topic_id else None
        if "app_ref" in changes:
            if changes["app_ref"] is None:
                raise ValidationFailed.at(
                    "app_id", "Push campaigns need `app_id` (the push app).", code="required"
                )
            fields["app_id"] = _app_id(project, changes["app_ref"])
        if "from_email" in changes:
            fields["from_email"] = _sender_checked(changes["from_email"])
        if "scheduled_at" in changes:
            fields["scheduled_at"] = _schedule_checked(changes["scheduled_at"])
        if "transactional" in changes:
            fields["transactional"] = changes["transactional"]
        model_update(campaign, fields=fields)
    return campaign


def campaign_delete(*, project: Project, channel: str, campaign_id: uuid.UUID | str) -> Campaign:
    """Soft-deletes a campaign that is not on its way out (scheduled or sending: cancel it
    first); it disappears from the API, its messages and history stay."""
    with transaction.atomic():
        campaign = _locked(project, channel, campaign_id)
        if campaign.status in (CampaignStatus.SCHEDULED, CampaignStatus.SENDING):
            raise CampaignTransitionNotAllowed(action="delete", status=campaign.status)
        model_update(campaign, fields={"deleted_at": clock.now()})
    return campaign


# --- review -------------------------------------------------------------------------------


def _sender_of(campaign: Campaign) -> str | None:
    return campaign.from_email or campaign.template.from_email or campaign.project.default_from


def campaign_readiness_issues(campaign: Campaign) -> list[Issue]:
    """What keeps the campaign from review or sending (empty: nothing)."""
    issues = []
    if campaign.template.deleted_at is not None:
        issues.append(Issue("deleted", "template_id", "The template was deleted."))
    elif template_version_published(template=campaign.template) is None:
        issues.append(
            Issue(
                "not_published",
                "template_id",
                "The template has no published version; publish it first.",
            )
        )
    if campaign.audience_id is None and campaign.topic_id is None:
        issues.append(
            Issue(
                "required",
                "audience_id",
                "The campaign's audience or topic was deleted; choose another.",
            )
        )
    if campaign.channel == Channel.EMAIL:
        sender = _sender_of(campaign)
        if not sender:
            issues.append(
                Issue(
                    "required",
                    "from",
                    "No sender: give `from`, or set one on the template or as the "
                    "project's `default_from`.",
                )
            )
        elif problem := address_problem(sender):
            issues.append(Issue("invalid_email", "from", problem))
    return issues


def _transition(
    *,
    campaign_id: uuid.UUID | str,
    action: str,
    from_statuses: Collection[str],
    changes: Mapping[str, Any],
    project: Project | None = None,
    channel: str | None = None,
) -> int:
    """The conditional UPDATE of a transition: 404 for a campaign that is not there,
    409 when its status is not one of `from_statuses`."""
    now = clock.now()
    scope: dict[str, Any] = {"pk": campaign_id, "deleted_at__isnull": True}
    if project is not None:
        scope["project"] = project
    if channel is not None:
        scope["channel"] = channel
    updated = Campaign.objects.filter(**scope, status__in=list(from_statuses)).update(
        **changes, updated_at=now
    )
    if not updated:
        current = Campaign.objects.filter(**scope).values_list("status", flat=True).first()
        if current is None:
            raise NotFound("No such campaign.")
        raise CampaignTransitionNotAllowed(action=action, status=current)
    return updated


def _reloaded(campaign_id: uuid.UUID | str) -> Campaign:
    return Campaign.objects.select_related("project", "template").get(pk=campaign_id)


def campaign_submit(*, project: Project, channel: str, campaign_id: uuid.UUID | str) -> Campaign:
    """Sends a draft to review (`in_review`): its template must be published and, for
    email, a sender known; the review note of an earlier rejection is cleared."""
    campaign = campaign_get(project=project, channel=channel, campaign_id=campaign_id)
    if campaign is None:
        raise NotFound("No such campaign.")
    if campaign.status != CampaignStatus.DRAFT:
        raise CampaignTransitionNotAllowed(action="submit", status=campaign.status)
    issues = campaign_readiness_issues(campaign)
    if issues:
        raise CampaignNotReady(issues, "The campaign cannot be submitted for review yet.")
    _transition(
        project=project,
        channel=channel,
        campaign_id=campaign.pk,
        action="submit",
        from_statuses=[CampaignStatus.DRAFT],
        changes={
            "status": CampaignStatus.IN_REVIEW,
            "submitted_at": clock.now(),
            "review_note": None,
        },
    )
    return _reloaded(campaign.pk)


def campaign_withdraw(*, project: Project, channel: str, campaign_id: uuid.UUID | str) -> Campaign:
    """Takes a campaign under review back to draft, to edit it."""
    _transition(
        project=project,
        channel=channel,
        campaign_id=campaign_id,
        action="withdraw",
        from_statuses=[CampaignStatus.IN_REVIEW],
        changes={"status": CampaignStatus.DRAFT, "submitted_at": None},
    )
    return _reloaded(campaign_id)


def campaign_approve(*, campaign_id: uuid.UUID | str, user_id: int) -> Campaign:
    """Staff approve a campaign under review: the template's published version and the
    recipient count now are frozen on it, and the console's history records who."""
    with transaction.atomic():
        campaign = (
            Campaign.objects.select_for_update(of=("self",))
            .select_related("project", "template")
            .filter(pk=campaign_id, deleted_at__isnull=True)
            .first()
        )
        if campaign is None:
            raise NotFound("No such campaign.")
        if campaign.status != CampaignStatus.IN_REVIEW:
            raise CampaignTransitionNotAllowed(action="approve", status=campaign.status)
        issues = campaign_readiness_issues(campaign)
        if issues:
            raise CampaignNotReady(issues, "The campaign cannot be approved as it stands.")
        version = template_version_published(template=campaign.template)
        assert version is not None
        counts = campaign_audience_counts(campaign)
        _transition(
            campaign_id=campaign.pk,
            action="approve",
            from_statuses=[CampaignStatus.IN_REVIEW],
            changes={
                "status": CampaignStatus.APPROVED,
                "approved_at": clock.now(),
                "approved_by_id": user_id,
                "template_version": version,
                "recipient_count": counts.recipients,
            },
        )
        campaign = _reloaded(campaign.pk)
        campaign_history_record(
            campaign=campaign,
            actor=Actor(user_id=user_id),
            message=f"Approved with template version {version.version_number} for "
            f"{counts.recipients} recipient(s) ({counts.suppressed} suppressed).",
        )
    return campaign


def campaign_reject(*, campaign_id: uuid.UUID | str, user_id: int, reason: str) -> Campaign:
    """Staff send a campaign under review back to draft with `reason`, which the API
    shows as `review_note`; the console's history records who."""
    reason = reason.strip()
    if not reason:
        raise ValidationFailed.at("reason", "Say why the campaign is rejected.", code="required")
    with transaction.atomic():
        _transition(
            campaign_id=campaign_id,
            action="reject",
            from_statuses=[CampaignStatus.IN_REVIEW],
            changes={"status": CampaignStatus.DRAFT, "review_note": reason, "submitted_at": None},
        )
        campaign = _reloaded(campaign_id)
        campaign_history_record(
            campaign=campaign, actor=Actor(user_id=user_id), message=f"Rejected: {reason}"
        )
    return campaign


def campaign_cancel(
    *, project: Project, channel: str, campaign_id: uuid.UUID | str, actor: Actor
) -> Campaign:
    """Cancels a campaign in any state before `sent`. A sending one stops: fan-out
    batches still due make nothing, a batch in flight is waited for (it holds the
    campaign row), and queued messages are not sent (the delivery workers check)."""
    with transaction.atomic():
        _transition(
            project=project,
            channel=channel,
            campaign_id=campaign_id,
            action="cancel",
            from_statuses=CANCELABLE_STATUSES,
            changes={"status": CampaignStatus.CANCELED, "canceled_at": clock.now()},
        )
        # Batches not yet claimed need no worker to find out.
        CampaignFanout.objects.filter(campaign_id=campaign_id, status__in=DUE_STATUSES).update(
            status=WorkStatus.PROCESSED, next_attempt_at=None
        )
        campaign = _reloaded(campaign_id)
        campaign_history_record(campaign=campaign, actor=actor, message="Canceled")
    return campaign
