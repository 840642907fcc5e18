"""Push apps, their providers (FCM, APNs, Web Push) and the device installations that
receive their notifications."""

from django.db import models

from contacts.models import Contact
from tenancy.models import ProjectScopedModel


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
    config.secrets (never shown, logged or answered)."""

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
