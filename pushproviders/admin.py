"""Staff console for push apps, providers and installations. Secrets are never shown:
providers show readiness (with why a stored secret does not count), installations only
the end of their token."""

from typing import Any

from django.contrib import admin
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from config.admin import ReadOnlyInline, ReadOnlyModelAdmin
from pushproviders.models import PushApp, PushInstallation, PushProvider
from pushproviders.readiness import provider_readiness

PROVIDER_PUBLIC_FIELDS = (
    "id",
    "project",
    "app",
    "name",
    "platform",
    "status",
    "readiness",
    "fcm_project_id",
    "android_package_name",
    "apns_key_id",
    "apns_team_id",
    "apns_bundle_id",
    "apns_environment",
    "web_vapid_public_key",
    "web_vapid_subject",
    "created_at",
    "updated_at",
)


def readiness_of(provider: PushProvider) -> SafeString | str:
    readiness = provider_readiness(provider)
    if readiness.ready:
        return "ready"
    return format_html_join(
        "",
        "<div>missing: {}{}</div>",
        (
            (name, f" ({readiness.reasons[name]})" if name in readiness.reasons else "")
            for name in readiness.missing
        ),
    )


class PushProviderInline(ReadOnlyInline):
    model = PushProvider
    fields = ("name", "platform", "status", "readiness")
    readonly_fields = fields

    @admin.display(description="readiness")
    def readiness(self, provider: PushProvider) -> Any:
        return readiness_of(provider)


@admin.register(PushApp)
class PushAppAdmin(ReadOnlyModelAdmin):
    """Read-only: apps change through the API."""

    list_display = ["name", "public_id", "project", "created_at"]
    list_select_related = ["project"]
    search_fields = ["name", "=public_id", "=id"]
    raw_id_fields = ["project"]
    readonly_fields = ("id", "project", "name", "public_id", "created_at", "updated_at")
    fields = readonly_fields
    inlines = [PushProviderInline]


@admin.register(PushProvider)
class PushProviderAdmin(ReadOnlyModelAdmin):
    """Read-only; the encrypted secrets are not even fetched."""

    list_display = ["name", "platform", "status", "app", "project", "created_at"]
    list_filter = ["platform", "status"]
    list_select_related = ["app", "project"]
    search_fields = ["name", "=id", "=app__public_id"]
    raw_id_fields = ["project", "app"]
    readonly_fields = PROVIDER_PUBLIC_FIELDS
    fields = PROVIDER_PUBLIC_FIELDS

    @admin.display(description="readiness")
    def readiness(self, provider: PushProvider) -> Any:
        return readiness_of(provider)


@admin.register(PushInstallation)
class PushInstallationAdmin(ReadOnlyModelAdmin):
    """Read-only; tokens appear only as their last characters."""

    list_display = ["id", "platform", "token_end", "active", "app", "contact", "last_seen_at"]
    list_filter = ["platform", "active"]
    list_select_related = ["app", "contact", "project"]
    search_fields = ["=id", "=contact__email", "=app__public_id"]
    raw_id_fields = ["project", "app", "contact"]
    readonly_fields = (
        "id",
        "project",
        "app",
        "contact",
        "platform",
        "token_end",
        "active",
        "created_at",
        "updated_at",
        "last_seen_at",
    )
    fields = readonly_fields

    @admin.display(description="token")
    def token_end(self, installation: PushInstallation) -> str:
        return installation.token_hint
