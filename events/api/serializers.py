"""Shapes of the events API: hand-built dicts on the hot path, serializers for the schema."""

from collections.abc import Sequence
from typing import Any

from rest_framework import serializers

from config.clock import iso_utc
from events.models import EventSource, EventStatus, EventType
from events.shapes import schema_hint


def event_types_data(entries: Sequence[EventType]) -> list[dict[str, Any]]:
    """Catalog entries as listed: names and observed types only, never example payloads."""
    return [
        {
            "id": str(entry.id),
            "event": entry.event,
            "source": entry.source,
            "schema_hint": schema_hint(entry.field_types),
            "contains_pii": entry.contains_pii,
            "first_seen_at": iso_utc(entry.first_seen_at),
            "last_seen_at": iso_utc(entry.last_seen_at),
            "occurrences_count": entry.occurrences_count,
        }
        for entry in entries
    ]


# The serializers below document the API (OpenAPI); the views build the same shapes by hand.


class EventSubmissionSerializer(serializers.Serializer):
    event = serializers.CharField(max_length=200, help_text="e.g. `order.completed`")
    email = serializers.EmailField(required=False, allow_null=True)
    contact_id = serializers.UUIDField(required=False, allow_null=True)
    external_id = serializers.CharField(max_length=255, required=False, allow_null=True)
    payload = serializers.DictField(required=False, default=dict)
    occurred_at = serializers.DateTimeField(required=False, allow_null=True)
    idempotency_key = serializers.CharField(max_length=255, required=False, allow_null=True)


class EventBatchSerializer(serializers.Serializer):
    events = EventSubmissionSerializer(many=True, help_text="1 to 500 events.")


class EventAcceptedSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    event = serializers.CharField()
    idempotency_key = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=EventStatus.choices)
    received_at = serializers.DateTimeField()
    duplicate = serializers.BooleanField()


class BatchItemErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.CharField()
    issues = serializers.ListField(child=serializers.DictField())


class BatchItemResultSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["accepted", "duplicate", "rejected"])
    id = serializers.UUIDField(allow_null=True)
    error = BatchItemErrorSerializer(allow_null=True)


class EventBatchResultSerializer(serializers.Serializer):
    results = BatchItemResultSerializer(many=True)
    accepted = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    rejected = serializers.IntegerField()


class EventTypeSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    event = serializers.CharField()
    source = serializers.ChoiceField(choices=EventSource.choices)  # type: ignore[assignment]
    schema_hint = serializers.CharField(help_text='JSON string, e.g. `{"total":"number"}`.')
    contains_pii = serializers.BooleanField()
    first_seen_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField()
    occurrences_count = serializers.IntegerField()
