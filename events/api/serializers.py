"""Shapes of the events API: hand-built dicts on the hot path, serializers for the schema."""

from collections.abc import Sequence
from typing import Any

from rest_framework import serializers

from config.api.serializers import StrictSerializer
from config.runtime.clock import iso_utc
from events.conf import (
    MAX_BATCH_ITEMS,
    MAX_EXTERNAL_ID_LENGTH,
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_NAME_LENGTH,
)
from events.models import EventSource, EventStatus, EventType
from events.shapes import schema_hint
from events.validation import NAME_PATTERN


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


class EventSubmissionSerializer(StrictSerializer):
    # At least one identity member with a value; `null` counts as absent.
    body_rules = {
        "anyOf": [
            {"required": ["contact_id"], "properties": {"contact_id": {"type": "string"}}},
            {"required": ["external_id"], "properties": {"external_id": {"type": "string"}}},
            {"required": ["email"], "properties": {"email": {"type": "string"}}},
        ]
    }

    event = serializers.RegexField(
        NAME_PATTERN.pattern,
        max_length=MAX_NAME_LENGTH,
        help_text="e.g. `order.completed`; names starting `sendrealm.` are reserved (422).",
    )
    email = serializers.EmailField(required=False, allow_null=True)
    contact_id = serializers.UUIDField(required=False, allow_null=True)
    external_id = serializers.CharField(
        max_length=MAX_EXTERNAL_ID_LENGTH, required=False, allow_null=True
    )
    payload = serializers.DictField(required=False, allow_null=True, help_text="Default `{}`.")
    occurred_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="With an offset; default: receipt time."
    )
    idempotency_key = serializers.CharField(
        max_length=MAX_IDEMPOTENCY_KEY_LENGTH, required=False, allow_null=True
    )


class EventBatchSerializer(StrictSerializer):
    # With many=True DRF builds a ListSerializer, which takes min_length and max_length;
    # the stub types the child's constructor.
    events = EventSubmissionSerializer(  # type: ignore[call-arg]
        many=True,
        min_length=1,
        max_length=MAX_BATCH_ITEMS,
        help_text=(
            f"1 to {MAX_BATCH_ITEMS} events. An item that is not a valid event is rejected "
            "alone, in its result."
        ),
    )


class EventAcceptedSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    event = serializers.CharField()
    idempotency_key = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=EventStatus.choices)
    received_at = serializers.DateTimeField()
    duplicate = serializers.BooleanField()


class BatchItemErrorSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.CharField()
    issues = serializers.ListField(child=serializers.DictField())


class BatchItemResultSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["accepted", "duplicate", "rejected"])
    id = serializers.UUIDField(allow_null=True)
    error = BatchItemErrorSerializer(allow_null=True)


class EventBatchResultSerializer(serializers.Serializer[Any]):
    results = BatchItemResultSerializer(many=True)
    accepted = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    rejected = serializers.IntegerField()


class EventTypeSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    event = serializers.CharField()
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Field.source; the stubs cannot see that.
    source = serializers.ChoiceField(choices=EventSource.choices)  # type: ignore[assignment]
    schema_hint = serializers.CharField(help_text='JSON string, e.g. `{"total":"number"}`.')
    contains_pii = serializers.BooleanField()
    first_seen_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField()
    occurrences_count = serializers.IntegerField()
