"""Emails: one message of a project to one or more recipients, its delivery job, and the
local capture that stands in for an SMTP server when none is configured."""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from config.db.ids import uuid7
from config.runtime import clock
from config.workqueue.models import WorkItem, dead_letter_index, due_index, lease_index
from messaging.models.templates import MessageTemplate, TemplateVersion
from tenancy.models import Project


class EmailStatus(models.TextChoices):
    QUEUED = "queued"
    SENT = "sent"
    DELIVERED = "delivered"
    BOUNCED = "bounced"
    COMPLAINED = "complained"
    FAILED = "failed"
    SUPPRESSED = "suppressed"


def email_id_new() -> uuid.UUID:
    """A new email's id: version 7, of the clock's now (what `created_at` defaults to)."""
    return uuid7(at=clock.now())


class Email(models.Model):
    """One message as requested (`POST /emails`, template tests, automations) and what
    became of it. Content is stored rendered, so a resend or a preview shows what went out.

    The table is partitioned by `created_at` (a partition per month, made ahead by the
    partition kit; migration 0014); its primary key is (id, created_at). The id carries
    the millisecond of `created_at` (senders make both from one clock reading), so a read
    by id names that millisecond too and looks in one partition
    (`messaging.selectors.emails.email_by_id`)."""

    id = models.UUIDField(primary_key=True, default=email_id_new, editable=False)
    # Indexed by `email_created_idx`, which starts with it. This key and those of the
    # template, version, topic and campaign are checked once per statement instead of
    # once per row (see `REFERENCES_CHECKED` below).
    project = models.ForeignKey(
        Project,
        on_delete=models.CASCADE,
        related_name="emails",
        db_index=False,
        db_constraint=False,
    )

    # --- The message, as rendered at request time (set by `email_create`). ---
    from_email = models.CharField(max_length=320)
    # Every requested address, in request order (the API's `to`).
    to = models.JSONField(default=list)
    # The addresses the message goes to: `to` minus suppressed ones (empty: `suppressed`).
    recipients = models.JSONField(default=list)
    reply_to = models.CharField(max_length=320, null=True, blank=True)
    subject = models.TextField(blank=True, default="")
    html = models.TextField(null=True, blank=True)
    text = models.TextField(null=True, blank=True)
    tags = models.JSONField(default=list)
    # The request's `data` (the template's `data` variable).
    data = models.JSONField(default=dict, encoder=DjangoJSONEncoder)

    # --- Where it came from. Null for inline content or an unknown recipient. ---
    template = models.ForeignKey(
        MessageTemplate,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="emails",
        db_index=False,
        db_constraint=False,
    )
    template_version = models.ForeignKey(
        TemplateVersion,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="emails",
        db_index=False,
        db_constraint=False,
    )
    contact = models.ForeignKey(
        "contacts.Contact", on_delete=models.SET_NULL, null=True, blank=True, related_name="emails"
    )
    # The topic the message is about (campaigns to a topic set it). Its unsubscribe link
    # takes the contact off this topic; without one the address is suppressed instead.
    topic = models.ForeignKey(
        "topics.Topic",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="emails",
        db_index=False,
        db_constraint=False,
    )
    # The campaign that made it (its fan-out, which writes the contact's
    # `CampaignRecipient` row with it: that row's key emails a contact once per
    # campaign); a canceled campaign's queued emails are not sent. Indexed by
    # `email_campaign_status_idx`, which starts with it (a campaign id, compared, implies
    # its `IS NOT NULL`).
    campaign = models.ForeignKey(
        "messaging.Campaign",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="emails",
        db_index=False,
        db_constraint=False,
    )

    # --- Lifecycle. Delivery sets `sent`/`failed`; ESP webhooks set `delivered`,
    # `bounced`, `complained`; tracking (the open pixel, click redirects, ESP-reported
    # opens and clicks) sets `opened_at` and `clicked_at`; all with conditional updates. ---
    status = models.CharField(
        max_length=16, choices=EmailStatus.choices, default=EmailStatus.QUEUED
    )
    # The Message-ID header (with angle brackets), chosen and stored before SMTP DATA
    # ends, so a bounce or a reply that quotes it finds the email even after a crash.
    message_id = models.CharField(max_length=255, blank=True, default="")
    # The ESP's own id of the accepted message (django-anymail's `anymail_status`), which
    # its webhooks quote; null for SMTP and the capture.
    provider_message_id = models.CharField(max_length=255, null=True, blank=True)
    last_error = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(default=clock.now, editable=False)
    sent_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    # First open and first click (later ones emit events but keep the first time; a
    # click also sets `opened_at` when it is unset).
    opened_at = models.DateTimeField(null=True, blank=True)
    clicked_at = models.DateTimeField(null=True, blank=True)
    bounced_at = models.DateTimeField(null=True, blank=True)
    complained_at = models.DateTimeField(null=True, blank=True)

    # --- Idempotency (`Idempotency-Key`, 24 h): the key the email was sent with (its
    # `EmailKey` holds it unique per project) and a hash of the request body, so a
    # repeat with another body is a conflict. ---
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    request_fingerprint = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        # No unique key here: a unique index of a table partitioned by time holds the
        # time column, so is unique per month only. The idempotency key is unique per
        # project by `EmailKey` (below); a campaign emails a contact at most once by its
        # `CampaignRecipient` row, written with the email.
        indexes = [
            # Serves the cursor listing of a project's emails.
            models.Index(fields=["project", "created_at", "id"], name="email_created_idx"),
            # Serves ESP webhooks, which name the message by the provider's id.
            models.Index(
                fields=["provider_message_id"],
                condition=models.Q(provider_message_id__isnull=False),
                name="email_provider_message_idx",
            ),
            # Serves bounces and replies that quote our Message-ID.
            models.Index(fields=["message_id"], name="email_message_id_idx"),
            # Serve the `SET NULL` of a deleted template, version or topic and the checks
            # that none is deleted while an email names it (migration 0009); emails
            # without one (inline content, campaigns to an audience) take no entry.
            *(
                models.Index(
                    fields=[name],
                    condition=models.Q(**{f"{name}__isnull": False}),
                    name=f"email_{name}_idx",
                )
                for name in ("template", "template_version", "topic")
            ),
            # Serves a campaign's stats (counts by status) and the check that none of its
            # emails is still queued.
            models.Index(
                fields=["campaign", "status"],
                condition=models.Q(campaign__isnull=False),
                name="email_campaign_status_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject or '(no subject)'} -> {', '.join(self.to)}"


class EmailKey(models.Model):
    """An `Idempotency-Key` used in a project and the email it made: one per project and
    key whatever the email's time (a unique index on the emails table would hold its
    partition key, so be unique per month only). Written in the email's transaction,
    before it: concurrent requests with one key race on this row's unique index, one
    insert wins and the others wait for it, then return the winner."""

    email = models.OneToOneField(
        Email,
        on_delete=models.CASCADE,
        primary_key=True,
        # A foreign key to a table partitioned by time must name its whole primary key
        # (id, created_at); Django's `on_delete` deletes the key with its email.
        db_constraint=False,
        related_name="+",
    )
    # Indexed by the unique constraint, which it leads.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, db_index=False, related_name="+")
    idempotency_key = models.CharField(max_length=255)
    # The email's `created_at`: whether the key is still in its window, and the email's
    # partition for the lookup.
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "idempotency_key"], name="email_key_one_per_project"
            ),
        ]

    def __str__(self) -> str:
        return self.idempotency_key


# The email's keys whose target is the same for every email of a bulk write (a campaign's
# fan-out batch, an automation's batch): (column, referenced table). PostgreSQL checks a
# foreign key once per inserted row, a lookup and a `FOR KEY SHARE` lock of the same
# row thousands of times over. These are checked by triggers instead (migration 0009),
# with the same guarantees: after each INSERT statement, the distinct targets of its
# rows are locked `FOR KEY SHARE` and must all exist (else SQLSTATE 23503, Django's
# IntegrityError), as must a new target an UPDATE sets; deleting a target (or changing
# its id) fails at commit while an email still names it, as a deferred NO ACTION key
# does. Django's `on_delete` runs first, as for any key. The contact's key (one target
# per row) stays a foreign key.
REFERENCES_CHECKED = (
    ("project_id", "tenancy_project"),
    ("template_id", "messaging_messagetemplate"),
    ("template_version_id", "messaging_templateversion"),
    ("topic_id", "topics_topic"),
    ("campaign_id", "messaging_campaign"),
)


class EmailDelivery(WorkItem):
    """The delivery job of one email (the table is the queue of the work-queue kit): the
    kit's claim, lease, retries and dead-letter; the outcome lands on the email."""

    email = models.OneToOneField(
        Email,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="delivery",
        # A foreign key to the emails table, partitioned by time, must name its whole
        # primary key (id, created_at); the email and its job are written together, and
        # Django's `on_delete` deletes the job with its email.
        db_constraint=False,
    )
    created_at = models.DateTimeField(default=clock.now, editable=False)

    class Meta:
        verbose_name_plural = "email deliveries"
        indexes = [
            # Serve the workers' claim: due deliveries, and expired leases of dead workers.
            due_index("emaildelivery_due_idx"),
            lease_index("emaildelivery_lease_idx"),
            dead_letter_index("emaildelivery_dead_idx"),
        ]

    def __str__(self) -> str:
        return f"delivery of {self.email_id}"


class DeadLetteredEmailDelivery(EmailDelivery):
    """The email dead-letter queue as the admin shows it: deliveries whose retries ran out."""

    class Meta:
        proxy = True
        verbose_name = "dead-lettered email delivery"
        verbose_name_plural = "email dead-letter queue"


class EspEventReceipt(models.Model):
    """An ESP tracking event already recorded, by a fingerprint of what the ESP reported:
    ESPs resend an event until they get a 200, and opens and clicks record a system event
    each time, so a resent one must meet its receipt. Kept for a week (the purge)."""

    id = models.BigAutoField(primary_key=True)
    # sha256 of the ESP, event type, message id, recipient, the ESP's time and the URL.
    fingerprint = models.CharField(max_length=64, unique=True)
    received_at = models.DateTimeField(default=clock.now)

    class Meta:
        indexes = [
            # Serves the purge of receipts past their retention, oldest first.
            models.Index(fields=["received_at"], name="espeventreceipt_received_idx"),
        ]

    def __str__(self) -> str:
        return self.fingerprint


class CapturedMessage(models.Model):
    """A message the local capture backend kept instead of sending (no `EMAIL_URL`): the
    raw bytes as an SMTP server would have received them, for the staff console."""

    id = models.BigAutoField(primary_key=True)
    # The email it was made from (its `X-Email-Id` header); null for other mail.
    email = models.ForeignKey(
        Email,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="captures",
        # A foreign key to the emails table, partitioned by time, must name its whole
        # primary key (id, created_at); Django's `on_delete` clears it when the email goes.
        db_constraint=False,
    )
    envelope_from = models.CharField(max_length=320)
    envelope_to = models.JSONField(default=list)
    subject = models.TextField(blank=True, default="")
    message_id = models.CharField(max_length=255, blank=True, default="")
    # `[[name, value], ...]` in message order (names repeat, so not a mapping).
    headers = models.JSONField(default=list)
    raw = models.BinaryField()
    created_at = models.DateTimeField(default=clock.now, editable=False)

    class Meta:
        indexes = [
            # Serves the console's newest-first listing.
            models.Index(fields=["-created_at"], name="capturedmessage_created_idx"),
        ]

    def __str__(self) -> str:
        return self.subject or "(no subject)"
