"""Staff console: events, the dead-letter queue (with requeue) and the event catalog."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from config.console.admin import BigTableAdmin
from config.workqueue.admin import DeadLetterAdmin, ErrorCodeFilter
from events.models import DeadLetteredEvent, Event, EventType
from events.services.deadletter import events_requeue

_EVENT_FIELDS: list[Any] = [
    "id",
    "project",
    "event",
    "source",
    "status",
    "attempts",
    "error_code",
    "last_error",
    "next_attempt_at",
    "email",
    "external_id",
    "contact_ref",
    "contact",
    "payload",
    "occurred_at",
    "idempotency_key",
    "processed_at",
    "cataloged_at",
    "lease_expires_at",
    "created_at",
]


@admin.register(Event)
class EventAdmin(BigTableAdmin):
    list_display = ["event", "project", "status", "attempts", "created_at"]
    list_filter = ["status", "source"]
    list_select_related = ["project"]
    search_fields = ["=id", "=idempotency_key", "event"]
    readonly_fields = _EVENT_FIELDS
    fields = _EVENT_FIELDS

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(DeadLetteredEvent)
class DeadLetteredEventAdmin(DeadLetterAdmin):
    """Events whose retries ran out, with their last error; requeue one or many."""

    list_display = ["event", "project", "error_code", "short_error", "attempts", "created_at"]
    list_filter = [ErrorCodeFilter, "source"]
    list_select_related = ["project"]
    search_fields = ["=id", "last_error", "event"]
    readonly_fields = _EVENT_FIELDS
    fields = _EVENT_FIELDS
    item, items = "event", "events"

    def requeue_rows(self, request: HttpRequest, ids: list[Any]) -> int:
        return events_requeue(ids=ids)


@admin.register(EventType)
class EventTypeAdmin(admin.ModelAdmin):
    list_display = ["event", "source", "project", "occurrences_count", "contains_pii"]
    list_filter = ["source", "contains_pii"]
    list_select_related = ["project"]
    search_fields = ["event"]
    readonly_fields = [
        "id",
        "project",
        "event",
        "source",
        "field_types",
        "contains_pii",
        "pii_fields",
        "example_payload",
        "first_seen_at",
        "last_seen_at",
        "occurrences_count",
        "created_at",
        "updated_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
