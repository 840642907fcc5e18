"""Staff console for push apps, providers, installations, and push messages with their
deliveries. Secrets are never shown: providers show readiness (with why a stored secret
does not count), installations only the end of their token, deliveries no token at all.
Dead-lettered deliveries can be requeued by staff who may change deliveries."""

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from config.console.admin import ReadOnlyInline, ReadOnlyModelAdmin, pretty_json, rows_by_id
from config.workqueue.admin import WorkQueueAdmin
from config.workqueue.models import WorkStatus
from pushproviders.models import (
    PushApp,
    PushDelivery,
    PushInstallation,
    PushMessage,
    PushProvider,
)
from pushproviders.readiness import provider_readiness
from pushproviders.services.delivery import push_deliveries_requeue

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


class PushDeliveryInline(ReadOnlyInline):
    model = PushDelivery
    fields = (
        "position",
        "installation_ref",
        "platform",
        "state",
        "provider_message_id",
        "error",
        "attempts",
        "status",
        "sent_at",
        "opened_at",
    )
    readonly_fields = fields
    ordering = ("position",)

    # The installation may be gone (deliveries outlive it): shown by id, never loaded.
    @admin.display(description="installation")
    def installation_ref(self, delivery: PushDelivery) -> str:
        return str(delivery.installation_id)


@admin.register(PushMessage)
class PushMessageAdmin(ReadOnlyModelAdmin):
    """Read-only: messages are sent through the API; their state comes from delivery."""

    list_display = ["__str__", "status", "app", "project", "test", "created_at", "sent_at"]
    list_filter = ["status", "test"]
    list_select_related = ["app", "project"]
    search_fields = ["=id", "=idempotency_key"]
    search_help_text = "Push message id or Idempotency-Key (exact)."
    raw_id_fields = ["project", "app", "template", "template_version", "contact"]
    readonly_fields = (
        "id",
        "project",
        "app",
        "status",
        "test",
        "title",
        "body",
        "data_pretty",
        "template",
        "template_version",
        "contact",
        "idempotency_key",
        "created_at",
        "sent_at",
    )
    fields = readonly_fields
    inlines = [PushDeliveryInline]

    @admin.display(description="data")
    def data_pretty(self, message: PushMessage) -> SafeString:
        return pretty_json(message.data)


class DeliveryStateFilter(admin.SimpleListFilter):
    title = "queue"
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(WorkStatus.DEAD_LETTERED.value, "dead-lettered (can be requeued)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(status=value)


@admin.register(PushDelivery)
class PushDeliveryAdmin(WorkQueueAdmin):
    """Deliveries with their attempts and last error; the dead-lettered ones (failed or
    invalid_token) can be requeued. Every field is read-only."""

    list_display = [
        "id",
        "platform",
        "state",
        "status",
        "attempts",
        "error_code",
        "message",
        "created_at",
    ]
    list_filter = [DeliveryStateFilter, "state", "platform", "error_code"]
    list_select_related = ["message"]
    search_fields = ["=id", "=message__id", "=installation_id"]
    search_help_text = "Delivery, push message or installation id (exact)."

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[PushDelivery], search_term: str
    ) -> tuple[QuerySet[PushDelivery], bool]:
        # Ids only, matched exactly on their columns: Django's `=` search would compare
        # the installation's foreign key case-insensitively, which it cannot.
        term = search_term.strip()
        if not term:
            return queryset, False
        return rows_by_id(queryset, term, ["id", "message_id", "installation_id"]), False

    raw_id_fields = ["message", "contact"]
    readonly_fields = (
        "id",
        "message",
        "installation_ref",
        "contact",
        "platform",
        "position",
        "state",
        "provider_message_id",
        "error",
        "title",
        "body",
        "data_pretty",
        "status",
        "attempts",
        "error_code",
        "last_error",
        "next_attempt_at",
        "lease_expires_at",
        "created_at",
        "sent_at",
        "opened_at",
    )
    fields = readonly_fields
    item, items = "delivery", "deliveries"

    @admin.display(description="installation")
    def installation_ref(self, delivery: PushDelivery) -> str:
        return str(delivery.installation_id)

    @admin.display(description="data")
    def data_pretty(self, delivery: PushDelivery) -> SafeString:
        return pretty_json(delivery.data)

    def requeue_rows(self, request: HttpRequest, ids: list[Any]) -> int:
        return push_deliveries_requeue(ids=ids)
