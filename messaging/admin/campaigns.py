"""The campaign review console: every campaign, and the review queue (campaigns awaiting
review, oldest submission first). A campaign's page shows its message rendered as
recipients will get it (email: subject, the HTML in a sandboxed frame, the text; push:
title and body as a device shows them) and who it would reach. Staff holding
`messaging.approve_campaign` approve campaigns (freezing the template version and the
recipient count) or reject them back to draft with a reason; both land in the history.

Campaigns are otherwise read-only here: drafts change through the API. Their fan-out
batches are listed too; a batch whose retries ran out keeps its campaign `sending` until
staff who may change batches requeue it."""

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from config.api.errors import ServiceError
from config.console.admin import ReadOnlyModelAdmin, pretty_json
from config.workqueue.admin import WorkQueueAdmin
from config.workqueue.models import WorkStatus
from messaging.admin.campaign_review import (
    APPROVE_PERMISSION,
    approve_one,
    audience_counts,
    funnel_html,
    reject_one,
    review_context,
    user_id_of,
)
from messaging.models import (
    Campaign,
    CampaignAwaitingReview,
    CampaignFanout,
    CampaignStatus,
    Channel,
)
from messaging.selectors.campaigns import campaign_candidates
from messaging.selectors.templates import template_version_current, template_version_published
from messaging.services.campaign_fanout import campaign_fanouts_requeue
from messaging.services.rendering import RenderedEmail, render_version, template_context

_FIELDS = (
    "id",
    "project",
    "name",
    "channel",
    "status",
    "review_note",
    "template",
    "template_version",
    "audience",
    "topic",
    "app_id",
    "from_email",
    "sender",
    "scheduled_at",
    "recipients",
    "message_preview",
    "stats",
    "fanout",
    "submitted_at",
    "approved_at",
    "approved_by",
    "started_at",
    "sent_at",
    "canceled_at",
    "created_at",
    "updated_at",
    "deleted_at",
)


# Fields of one channel only: an email campaign has no push app, a push campaign no sender.
_NOT_FOR = {Channel.EMAIL: {"app_id"}, Channel.PUSH: {"from_email", "sender"}}


class CampaignAdmin(ReadOnlyModelAdmin):
    """Every campaign; approve and reject act on those in review (others are reported)."""

    list_display = [
        "name",
        "channel",
        "status",
        "project",
        "submitted_at",
        "approved_at",
        "recipient_count",
        "created_at",
    ]
    list_filter = ["status", "channel"]
    list_select_related = ["project"]
    search_fields = ["=id", "name"]
    search_help_text = "Campaign id (exact) or words of its name."
    raw_id_fields = ["project", "template", "template_version", "audience", "topic"]
    readonly_fields = _FIELDS
    fields = _FIELDS
    actions = ["approve", "reject"]
    change_form_template = "admin/messaging/campaign/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).select_related("project", "template")

    def has_approve_campaign_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm(APPROVE_PERMISSION))

    # --- what the change page shows ---

    @admin.display(description="recipients")
    def recipients(self, obj: Campaign) -> str:
        counts = audience_counts(obj)
        now = f"{counts.recipients} now ({counts.suppressed} suppressed or unsubscribed)"
        if obj.recipient_count is None:
            return now
        return f"{obj.recipient_count} at approval; {now}"

    @admin.display(description="message as recipients get it")
    def message_preview(self, obj: Campaign) -> SafeString | str:
        version = (
            obj.template_version
            or template_version_published(template=obj.template)
            or template_version_current(template=obj.template)
        )
        if version is None:
            return "(the template has no content)"
        candidates = campaign_candidates(obj)
        contact = (
            # `topic_subscribed` is an annotation of campaign_candidates, which the plugin cannot
            # see through the selector.
            candidates.filter(topic_subscribed=True).order_by("id").first()  # type: ignore[misc]
            if candidates is not None
            else None
        )
        variables = template_context(project=obj.project, contact=contact)
        try:
            rendered = render_version(version, variables)
        except ServiceError as error:
            return format_html("<p>Does not render: {}</p>", error.details or error.message)
        about = format_html(
            "<p>Version {} ({}), rendered for {}. Undefined: {}</p>",
            version.version_number,
            version.state,
            contact or "no contact (the audience is empty)",
            ", ".join(rendered.undefined_variables) or "none",
        )
        if not isinstance(rendered, RenderedEmail):
            # As a device shows a notification: the title in bold over the body.
            device = format_html(
                '<div style="max-width:360px;padding:12px 14px;border-radius:14px;'
                'background:#f2f2f7;font-family:-apple-system,sans-serif">'
                '<div style="font-size:12px;color:#666">APP · now</div>'
                "<div><strong>{}</strong></div><div>{}</div></div>",
                rendered.title or "",
                rendered.body or "",
            )
            return format_html("{}{}{}", about, device, pretty_json(rendered.data))
        # The message's HTML runs in a sandboxed frame: no scripts, forms or same origin;
        # escaped into the attribute, so it cannot break out of it.
        frame = (
            format_html(
                '<iframe sandbox="" srcdoc="{}" style="width:100%;height:480px;'
                'border:1px solid #ccc;background:#fff"></iframe>',
                rendered.html,
            )
            if rendered.html is not None
            else ""
        )
        text = (
            format_html('<pre style="white-space:pre-wrap">{}</pre>', rendered.text)
            if rendered.text is not None
            else ""
        )
        return format_html(
            "{}<p><strong>Subject:</strong> {}</p>{}{}", about, rendered.subject, frame, text
        )

    @admin.display(description="funnel")
    def stats(self, obj: Campaign) -> SafeString | str:
        return funnel_html(obj)

    @admin.display(description="fan-out batches")
    def fanout(self, obj: Campaign) -> SafeString | str:
        batches = list(obj.fanouts.order_by("position").values_list("status", "last_error"))
        if not batches:
            return "none (not sent yet)"
        done = sum(1 for status, _ in batches if status == WorkStatus.PROCESSED)
        dead = sum(1 for status, _ in batches if status == WorkStatus.DEAD_LETTERED)
        errors = [(error,) for status, error in batches if error and status != "processed"]
        listing = reverse("admin:messaging_campaignfanout_changelist") + f"?q={obj.pk}"
        return format_html(
            '<p>{} of {} done, {} dead-lettered (<a href="{}">the batches</a>)</p>{}',
            done,
            len(batches),
            dead,
            listing,
            format_html_join("", "<p>{}</p>", errors[:5]),
        )

    # --- review: the changelist's actions and the page's buttons, one path each ---

    @admin.action(description="Approve selected campaigns", permissions=["approve_campaign"])
    def approve(self, request: HttpRequest, queryset: QuerySet[Campaign]) -> None:
        for campaign in queryset.order_by("submitted_at"):
            approve_one(self, request, campaign)

    @admin.action(
        description="Reject selected campaigns (back to draft, with a reason)",
        permissions=["approve_campaign"],
    )
    def reject(self, request: HttpRequest, queryset: QuerySet[Campaign]) -> HttpResponse | None:
        reason = str(request.POST.get("reason", "")).strip()
        if "apply" not in request.POST or not reason:
            # First the reason, asked on a page of its own; the API shows it as
            # `review_note`.
            context = {
                **self.admin_site.each_context(request),
                "title": "Reject campaigns",
                "campaigns": list(queryset),
                "selected": [str(pk) for pk in queryset.values_list("pk", flat=True)],
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "opts": self.model._meta,
                "missing_reason": "apply" in request.POST,
            }
            return TemplateResponse(request, "admin/messaging/campaign/reject.html", context)
        for campaign in queryset:
            reject_one(self, request, campaign, reason=reason)
        return None

    def get_urls(self) -> list[URLPattern]:
        name = f"{self.opts.app_label}_{self.opts.model_name}"
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/approve/", view(self.approve_view), name=f"{name}_approve"),
            path("<path:object_id>/reject/", view(self.reject_view), name=f"{name}_reject"),
            *super().get_urls(),
        ]

    def _decided(self, request: HttpRequest, object_id: str) -> Campaign:
        """The campaign a review button names, for staff who may decide (403 otherwise);
        any status, so that a second click is answered, not a 404."""
        if not self.has_approve_campaign_permission(request):
            raise PermissionDenied
        try:
            campaign = (
                Campaign.objects.select_related("project", "template")
                .filter(pk=unquote(object_id), deleted_at__isnull=True)
                .first()
            )
        except (ValidationError, ValueError):
            campaign = None
        if campaign is None:
            raise Http404("No such campaign.")
        return campaign

    def _campaign_page(self, campaign: Campaign) -> HttpResponseRedirect:
        # The campaign's own page: it stays there whatever its status (the review queue's
        # page of it is gone once it leaves review).
        return HttpResponseRedirect(reverse("admin:messaging_campaign_change", args=[campaign.pk]))

    def approve_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The page's Approve button: as the approve action, for this campaign."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        campaign = self._decided(request, object_id)
        try:
            shown: int | None = int(str(request.POST.get("expected_recipients", "")))
        except ValueError:
            shown = None
        approve_one(self, request, campaign, shown=shown)
        return self._campaign_page(campaign)

    def reject_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The page's Reject button: back to draft with the note, as the reject action."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        campaign = self._decided(request, object_id)
        note = str(request.POST.get("note", "")).strip()
        if not note:
            self.message_user(
                request, "Say why the campaign is rejected: nothing changed.", messages.ERROR
            )
            return HttpResponseRedirect(
                reverse(
                    f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[campaign.pk]
                )
            )
        reject_one(self, request, campaign, reason=note)
        return self._campaign_page(campaign)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = super().get_fields(request, obj)
        if obj is None:
            return fields
        hidden = _NOT_FOR.get(obj.channel, set())
        return [name for name in fields if name not in hidden]

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> HttpResponse:
        # `obj` is the instance the page's fields show: the review box's counts, cached on
        # it, serve the recipients field too (one count of the audience per page).
        if obj is not None:
            name = f"admin:{self.opts.app_label}_{self.opts.model_name}"
            context["review"] = review_context(
                self,
                request,
                obj,
                urls={
                    "approve_url": reverse(f"{name}_approve", args=[obj.pk]),
                    "reject_url": reverse(f"{name}_reject", args=[obj.pk]),
                },
            )
        return super().render_change_form(request, context, add, change, form_url, obj)


admin.site.register(Campaign, CampaignAdmin)


@admin.register(CampaignAwaitingReview)
class CampaignAwaitingReviewAdmin(CampaignAdmin):
    """The review queue: campaigns in review, the longest waiting first."""

    list_display = ["name", "channel", "project", "submitted_at", "created_at"]
    list_filter = ["channel"]
    ordering = ["submitted_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return (
            super()
            .get_queryset(request)
            .filter(status=CampaignStatus.IN_REVIEW, deleted_at__isnull=True)
        )

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: Any = None
    ) -> HttpResponse:
        # The history is kept on the campaign itself (approvals, rejections, sends).
        return HttpResponseRedirect(reverse("admin:messaging_campaign_history", args=[object_id]))


_FANOUT_FIELDS = (
    "campaign",
    "position",
    "after_contact_id",
    "upto_contact_id",
    "status",
    "attempts",
    "messages",
    "skipped",
    "next_attempt_at",
    "lease_expires_at",
    "error_code",
    "last_error",
    "created_at",
)


@admin.register(CampaignFanout)
class CampaignFanoutAdmin(WorkQueueAdmin):
    """Campaigns' fan-out batches (work-queue items). One whose retries ran out leaves its
    campaign `sending`; requeueing it resumes the send, and the batch reaches only the
    contacts it had not reached."""

    list_display = ["campaign", "position", "status", "attempts", "messages", "skipped"]
    list_filter = ["status", "error_code"]
    list_select_related = ["campaign"]
    search_fields = ["=campaign__id"]
    search_help_text = "Campaign id (exact)."
    raw_id_fields = ["campaign"]
    readonly_fields = _FANOUT_FIELDS
    fields = _FANOUT_FIELDS
    item, items = "batch", "batches"
    left_alone = "not dead-lettered, or their campaign is not sending"

    def requeue_rows(self, request: HttpRequest, ids: list[Any]) -> int:
        return campaign_fanouts_requeue(ids=ids, user_id=user_id_of(request))
