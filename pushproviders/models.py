"""Push apps, their providers (FCM, APNs, Web Push), the device installations that
receive their notifications, and the messages sent to them with one delivery per device."""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from config.runtime import clock
from config.workqueue.models import WorkItem, dead_letter_index, due_index, lease_index
from contacts.models import Contact
from messaging.models import Campaign, MessageTemplate, TemplateVersion
from tenancy.models import Project, ProjectScopedModel


class Platform(models.TextChoices):
    FCM = "fcm"
    APNS = "apns"
    WEBPUSH = "webpush"


class ProviderStatus(models.TextChoices):
    ACTIVE = "active"
    DISABLED = "disabled"


class ApnsEnvironment(models.TextChoices):
    PRODUCTION = "production"
    SANDBOX = "sandbox"


class PushApp(ProjectScopedModel):
    """An app (or site) whose devices receive push notifications."""

    name = models.CharField(max_length=200)
    # What client code embeds (`app_` + random); unique everywhere so a lookup by it never
    # needs to know the project first.
    public_id = models.CharField(max_length=40, unique=True)

    class Meta:
        verbose_name = "push app"

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"


class PushProvider(ProjectScopedModel):
    """How an app reaches one platform: public settings in clear, secrets encrypted with
    config.runtime.secrets (never shown, logged or answered)."""

    app = models.ForeignKey(PushApp, on_delete=models.CASCADE, related_name="providers")
    name = models.CharField(max_length=200)
    platform = models.CharField(max_length=16, choices=Platform.choices)
    status = models.CharField(
        max_length=16, choices=ProviderStatus.choices, default=ProviderStatus.ACTIVE
    )
    # FCM: the service account JSON (encrypted); its project id and client email are public.
    service_account_encrypted = models.TextField(blank=True, default="")
    fcm_project_id = models.CharField(max_length=200, blank=True, default="")
    android_package_name = models.CharField(max_length=255, blank=True, default="")
    # APNs token authentication: the .p8 key (encrypted) with its key id and team id.
    apns_private_key_encrypted = models.TextField(blank=True, default="")
    apns_key_id = models.CharField(max_length=10, blank=True, default="")
    apns_team_id = models.CharField(max_length=10, blank=True, default="")
    apns_bundle_id = models.CharField(max_length=155, blank=True, default="")
    apns_environment = models.CharField(
        max_length=16, choices=ApnsEnvironment.choices, blank=True, default=""
    )
    # Web Push (VAPID): raw P-256 keys as unpadded base64url; the private one encrypted.
    web_vapid_public_key = models.CharField(max_length=100, blank=True, default="")
    web_vapid_private_key_encrypted = models.TextField(blank=True, default="")
    web_vapid_subject = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        verbose_name = "push provider"
        constraints = [
            # Sending picks the app's provider for an installation's platform.
            models.UniqueConstraint(
                fields=["app", "platform"], name="push_provider_one_per_platform"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.platform})"


class PushInstallation(ProjectScopedModel):
    """A device (or browser) of a contact that registered for an app's notifications.

    `token` is the FCM registration token, the APNs device token, or the Web Push
    subscription's endpoint (with its `p256dh` and `auth` keys beside it)."""

    app = models.ForeignKey(PushApp, on_delete=models.CASCADE, related_name="installations")
    contact = models.ForeignKey(
        Contact, on_delete=models.CASCADE, related_name="push_installations"
    )
    platform = models.CharField(max_length=16, choices=Platform.choices)
    token = models.TextField()
    # SHA-256 of `token`: the unique key (tokens are too long for a comfortable index).
    token_digest = models.CharField(max_length=64)
    web_p256dh = models.CharField(max_length=100, blank=True, default="")
    web_auth = models.CharField(max_length=40, blank=True, default="")
    active = models.BooleanField(default=True)
    last_seen_at = models.DateTimeField()

    class Meta:
        verbose_name = "push installation"
        constraints = [
            # Registering a token again finds its row (ON CONFLICT), also under concurrency.
            models.UniqueConstraint(
                fields=["app", "token_digest"], name="push_installation_one_per_token"
            ),
        ]
        indexes = [
            # Sending to a contact: its active installations of one app.
            models.Index(
                fields=["app", "contact"],
                condition=models.Q(active=True),
                name="push_installation_active",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.platform} installation {self.id}"

    @property
    def token_hint(self) -> str:
        """Enough of the token to tell installations apart in the console, never all of it."""
        return f"…{self.token[-6:]}" if len(self.token) > 12 else "…"


class PushMessageStatus(models.TextChoices):
    QUEUED = "queued"
    SENT = "sent"
    FAILED = "failed"
    PARTIALLY_SENT = "partially_sent"


class PushDeliveryState(models.TextChoices):
    QUEUED = "queued"
    SENT = "sent"
    FAILED = "failed"
    INVALID_TOKEN = "invalid_token"  # noqa: S105 (a state, not a secret)


# Deliveries in these states are done; a message rolls up once all of its are.
FINAL_DELIVERY_STATES = (
    PushDeliveryState.SENT,
    PushDeliveryState.FAILED,
    PushDeliveryState.INVALID_TOKEN,
)


class PushMessage(models.Model):
    """One push notification as requested (`POST /push/send`, tests, template tests) for
    one app, and the roll-up of its deliveries. Content is kept as rendered: for a
    template rendered per recipient contact, each delivery holds what its device got and
    the message the rendering of its first recipient."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="push_messages")
    # Null once the app is deleted (its providers and installations go with it).
    app = models.ForeignKey(
        PushApp, on_delete=models.SET_NULL, null=True, blank=True, related_name="messages"
    )
    template = models.ForeignKey(
        MessageTemplate,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="push_messages",
    )
    template_version = models.ForeignKey(
        TemplateVersion,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="push_messages",
    )
    # The contact the send named (or the one contact of the installations it named).
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="push_messages"
    )
    title = models.TextField(null=True, blank=True)
    body = models.TextField(null=True, blank=True)
    data = models.JSONField(default=dict, encoder=DjangoJSONEncoder)
    # The push campaign that made it (one message per recipient contact); a canceled
    # campaign's queued deliveries are not sent.
    campaign = models.ForeignKey(
        Campaign,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="push_messages",
    )
    # A test send (`POST /push/tests`, `POST /templates/{id}/test`).
    test = models.BooleanField(default=False)
    status = models.CharField(
        max_length=16, choices=PushMessageStatus.choices, default=PushMessageStatus.QUEUED
    )
    created_at = models.DateTimeField(default=clock.now, editable=False)
    # When the last delivery became final, if any of them was sent.
    sent_at = models.DateTimeField(null=True, blank=True)
    # `Idempotency-Key` (24 h) and a hash of the request body, as for emails.
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    request_fingerprint = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        verbose_name = "push message"
        constraints = [
            # Concurrent requests with one key race against this index: one insert wins,
            # the others wait for it and return the winner.
            models.UniqueConstraint(
                fields=["project", "idempotency_key"],
                condition=models.Q(idempotency_key__isnull=False),
                name="push_message_idempotency_key_unique",
            ),
        ]
        indexes = [
            # Serves the console's newest-first listing of a project's messages.
            models.Index(fields=["project", "created_at", "id"], name="push_message_created_idx"),
            # Serves a push campaign's stats (counts by status) and the check that none of
            # its messages is still queued.
            models.Index(
                fields=["campaign", "status"],
                condition=models.Q(campaign__isnull=False),
                name="push_message_campaign_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.body or f"push {self.id}"

    @property
    def deliveries_in_order(self) -> list["PushDelivery"]:
        """The deliveries in the order the send listed (or found) the installations."""
        return sorted(self.deliveries.all(), key=lambda delivery: delivery.position)


class PushDelivery(WorkItem):
    """The delivery of one message to one installation, and its job on the work-queue kit
    (the table is the queue). `state` is what the API shows; the kit's `status` is the
    job's (a dead-lettered job is a `failed` or `invalid_token` delivery).

    The table is partitioned by its message's time (`message_created_at`,
    config/db/partitions.py, made in migration 0005), so a message's deliveries live in one
    partition: its primary key in the database is (id, message_created_at), and the unique
    key per installation holds that column too, as PostgreSQL requires of a partitioned
    table. A message has one time, so the key is as unique as before."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: the unique push_delivery_one_per_installation leads with it.
    message = models.ForeignKey(
        PushMessage, on_delete=models.CASCADE, db_index=False, related_name="deliveries"
    )
    # The message's `created_at`, copied at insert: the partition key. Reads of a
    # message's deliveries name it, to read one partition.
    message_created_at = models.DateTimeField()
    # No database constraint: a deleted installation leaves its deliveries (and their
    # installation id) as the record of what was sent; a queued one then fails.
    installation = models.ForeignKey(
        PushInstallation,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="deliveries",
    )
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="push_deliveries"
    )
    platform = models.CharField(max_length=16, choices=Platform.choices)
    # Its place in the message (the order the send listed or found the installations).
    position = models.PositiveIntegerField(default=0)
    # What this device is sent, rendered for its contact (`data` values as strings).
    title = models.TextField(blank=True, default="")
    body = models.TextField(blank=True, default="")
    data = models.JSONField(default=dict)
    state = models.CharField(
        "delivery status",
        max_length=16,
        choices=PushDeliveryState.choices,
        default=PushDeliveryState.QUEUED,
    )
    provider_message_id = models.CharField(max_length=255, null=True, blank=True)
    # Why a final delivery failed (the provider's answer or a readiness problem).
    error = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(default=clock.now, editable=False)
    sent_at = models.DateTimeField(null=True, blank=True)
    # The first report of the notification being opened (`sendrealm.push.open` once).
    opened_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "push delivery"
        verbose_name_plural = "push deliveries"
        constraints = [
            # One delivery per installation of a message (with the message's one time);
            # also serves a message's deliveries, and an installation's open report.
            models.UniqueConstraint(
                fields=["message", "installation", "message_created_at"],
                name="push_delivery_one_per_installation",
            ),
        ]
        indexes = [
            # Serve the workers' claim: due deliveries, and expired leases of dead workers.
            due_index("pushdelivery_due_idx"),
            lease_index("pushdelivery_lease_idx"),
            dead_letter_index("pushdelivery_dead_idx"),
            # Serves the roll-up: does a message still have deliveries in flight?
            models.Index(
                fields=["message"],
                condition=models.Q(state="queued"),
                name="pushdelivery_pending_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"delivery of {self.message_id} to {self.installation_id}"
