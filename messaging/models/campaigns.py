"""Campaigns: one template sent to an audience or a topic, once reviewed and approved by
staff; its recipients (one row per contact, the key that makes a message go out at most
once) and the fan-out batches that make the messages, on the work-queue kit."""

from django.conf import settings
from django.db import models

from config.runtime import clock
from config.workqueue.models import WorkItem, due_index, lease_index
from messaging.models.templates import Channel, MessageTemplate, TemplateVersion
from tenancy.models import ProjectScopedModel


class CampaignStatus(models.TextChoices):
    DRAFT = "draft"
    IN_REVIEW = "in_review"
    APPROVED = "approved"
    SCHEDULED = "scheduled"
    SENDING = "sending"
    SENT = "sent"
    CANCELED = "canceled"


# A campaign in these states can still be canceled (everything before `sent`).
CANCELABLE_STATUSES = (
    CampaignStatus.DRAFT,
    CampaignStatus.IN_REVIEW,
    CampaignStatus.APPROVED,
    CampaignStatus.SCHEDULED,
    CampaignStatus.SENDING,
)


class Campaign(ProjectScopedModel):
    """A message (a template of the campaign's channel) for every contact of an audience,
    or every subscriber of a topic. Drafts are edited through the API, submitted for
    review, approved (or rejected back to draft) by staff in the console, then sent."""

    name = models.CharField(max_length=200)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    status = models.CharField(
        max_length=16, choices=CampaignStatus.choices, default=CampaignStatus.DRAFT
    )
    # Templates are only soft-deleted; the row goes only with its project.
    template = models.ForeignKey(
        MessageTemplate, on_delete=models.CASCADE, related_name="campaigns"
    )
    # Exactly one of the two while the campaign is edited; a deleted audience or topic
    # leaves the campaign without one, and it can no longer be submitted or sent.
    audience = models.ForeignKey(
        "audiences.Audience",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="campaigns",
    )
    topic = models.ForeignKey(
        "topics.Topic", on_delete=models.SET_NULL, null=True, blank=True, related_name="campaigns"
    )
    # The push app (push campaigns): a push family id, kept without a foreign key because
    # messaging sits beside that family and never depends on it.
    app_id = models.UUIDField(null=True, blank=True)
    # The sender as given (email campaigns); null: the template's, else `default_from`.
    from_email = models.CharField(max_length=320, null=True, blank=True)
    scheduled_at = models.DateTimeField(null=True, blank=True)
    # Sent past the project's frequency caps and quiet hours (never past suppression).
    transactional = models.BooleanField(default=False)
    # Why staff sent the campaign back to draft; cleared when it is submitted again.
    review_note = models.TextField(null=True, blank=True)

    # --- Frozen by approval: the version every message renders and who was counted. ---
    template_version = models.ForeignKey(
        TemplateVersion,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="campaigns",
    )
    recipient_count = models.PositiveIntegerField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    # The sender resolved when the send was requested (what every email carries).
    sender = models.CharField(max_length=320, blank=True, default="")

    submitted_at = models.DateTimeField(null=True, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    # When sending began (at once, or at `scheduled_at`); `sent_at` when every message
    # had left the queue.
    started_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    canceled_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        permissions = [
            ("approve_campaign", "Can approve campaigns for sending, or reject them to draft"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(audience__isnull=True) | models.Q(topic__isnull=True),
                name="campaign_audience_or_topic",
            ),
            models.CheckConstraint(
                condition=~models.Q(channel=Channel.PUSH) | models.Q(app_id__isnull=False),
                name="campaign_push_has_app",
            ),
        ]
        indexes = [
            # Serves the cursor listing of a project's campaigns of one channel.
            models.Index(
                fields=["project", "channel", "created_at", "id"],
                condition=models.Q(deleted_at__isnull=True),
                name="campaign_project_idx",
            ),
            # Serves the beat task that starts scheduled campaigns when they are due.
            models.Index(
                fields=["scheduled_at"],
                condition=models.Q(status="scheduled"),
                name="campaign_scheduled_idx",
            ),
            # Serves the sweep that finishes campaigns whose messages have all left.
            models.Index(
                fields=["started_at"],
                condition=models.Q(status="sending"),
                name="campaign_sending_idx",
            ),
            # Serves the console's review queue.
            models.Index(
                fields=["submitted_at"],
                condition=models.Q(status="in_review"),
                name="campaign_in_review_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class CampaignAwaitingReview(Campaign):
    """The console's review queue: campaigns submitted and not yet approved or rejected."""

    class Meta:
        proxy = True
        verbose_name = "campaign awaiting review"
        verbose_name_plural = "campaigns awaiting review"


class RecipientStatus(models.TextChoices):
    # A message (an email, a push message) was made for the contact (its own status says
    # what became of it).
    QUEUED = "queued"
    # Skipped: `reason` says why (suppressed address, unsubscribed, no address or device).
    SUPPRESSED = "suppressed"


class SkipReason(models.TextChoices):
    SUPPRESSED = "suppressed"
    UNSUBSCRIBED = "unsubscribed"
    NO_EMAIL = "no_email"
    NO_INSTALLATION = "no_installation"
    # The contact's frequency cap of the channel was reached (docs/API.md, Delivery policy).
    CAPPED = "capped"


class CampaignRecipient(models.Model):
    """A contact the campaign skipped or made a message for (an email or a push message):
    what lets a fan-out batch be redone without a second message to anyone, or a skipped
    contact counted twice. It holds each campaign's contacts unique for emails too, whose
    table, partitioned by time, cannot."""

    id = models.BigAutoField(primary_key=True)
    # Indexed by `campaign_recipient_one_per_contact`, which starts with it.
    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="recipients", db_index=False
    )
    contact = models.ForeignKey(
        "contacts.Contact", on_delete=models.CASCADE, related_name="campaign_recipients"
    )
    status = models.CharField(max_length=16, choices=RecipientStatus.choices)
    reason = models.CharField(max_length=32, choices=SkipReason.choices, blank=True, default="")
    created_at = models.DateTimeField(default=clock.now, editable=False)

    class Meta:
        constraints = [
            # Each contact is skipped (or sent a message) at most once per campaign,
            # however often a batch runs; its index also serves the per-campaign counts.
            models.UniqueConstraint(
                fields=["campaign", "contact"], name="campaign_recipient_one_per_contact"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.contact_id} in {self.campaign_id} ({self.status})"


class CampaignFanout(WorkItem):
    """One bounded batch of a campaign's fan-out: the recipients whose contact id falls in
    (`after_contact_id`, `upto_contact_id`] (open ends: the start and the end). A job of
    the work-queue kit; batches of one campaign run in parallel."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: the unique campaign_fanout_one_per_position leads with it.
    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, db_index=False, related_name="fanouts"
    )
    position = models.PositiveIntegerField()
    after_contact_id = models.UUIDField(null=True, blank=True)
    upto_contact_id = models.UUIDField(null=True, blank=True)
    # What the batch did (for the console): messages made and contacts skipped.
    messages = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=clock.now, editable=False)

    class Meta:
        verbose_name = "campaign fan-out batch"
        verbose_name_plural = "campaign fan-out batches"
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "position"], name="campaign_fanout_one_per_position"
            ),
        ]
        indexes = [
            # Serve the workers' claim: due batches, and expired leases of dead workers.
            due_index("campaignfanout_due_idx"),
            lease_index("campaignfanout_lease_idx"),
        ]

    def __str__(self) -> str:
        return f"batch {self.position} of {self.campaign_id}"
