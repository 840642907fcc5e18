"""The staff console's webhook pages: endpoints (read-only, secrets never fetched) and the
delivery log, whose dead-lettered (failed) rows staff may send again."""

import json
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.safestring import SafeString

from config.console.admin import ReadOnlyModelAdmin, pretty_json, rows_by_id
from config.workqueue.admin import WorkQueueAdmin
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services.replay import webhook_deliveries_requeue

ENDPOINT_FIELDS = (
    "id",
    "project",
    "url",
    "event_types",
    "description",
    "disabled_at",
    "disabled_reason",
    "failing_since",
    "deleted_at",
    "previous_secret_expires_at",
    "created_at",
    "updated_at",
)


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyModelAdmin):
    """Read-only; the encrypted secrets are not even fetched."""

    list_display = ["url", "project", "disabled_at", "failing_since", "deleted_at", "created_at"]
    list_select_related = ["project"]
    search_fields = ["=id", "url"]
    raw_id_fields = ["project"]
    readonly_fields = ENDPOINT_FIELDS
    fields = ENDPOINT_FIELDS

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookEndpoint]:
        return super().get_queryset(request).defer("secret", "previous_secret")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(WorkQueueAdmin):
    """The delivery log with attempts, status codes and errors; failed deliveries can be
    requeued (sent again with the same webhook-id). Every field is read-only."""

    list_display = [
        "id",
        "event_type",
        "state",
        "attempt_count",
        "last_status_code",
        "endpoint",
        "created_at",
    ]
    list_filter = ["state", "status", "error_code"]
    list_select_related = ["endpoint"]
    search_fields = ["=id", "=webhook_id"]
    search_help_text = "Delivery id or webhook-id (exact), or an endpoint or event id."
    raw_id_fields = ["project", "endpoint"]
    readonly_fields = (
        "id",
        "project",
        "endpoint",
        "event_id",
        "event_type",
        "webhook_id",
        "state",
        "attempt_count",
        "last_status_code",
        "error",
        "body_pretty",
        "status",
        "attempts",
        "error_code",
        "last_error",
        "next_attempt_at",
        "lease_expires_at",
        "created_at",
        "delivered_at",
    )
    fields = readonly_fields
    item, items = "delivery", "deliveries"

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[WebhookDelivery], search_term: str
    ) -> tuple[QuerySet[WebhookDelivery], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        if term.startswith("msg_"):
            return queryset.filter(webhook_id=term), False
        return rows_by_id(queryset, term, ["id", "endpoint_id", "event_id"]), False

    @admin.display(description="body")
    def body_pretty(self, delivery: WebhookDelivery) -> SafeString:
        return pretty_json(json.loads(delivery.body))

    def requeue_rows(self, request: HttpRequest, ids: list[Any]) -> int:
        return webhook_deliveries_requeue(ids=ids)
