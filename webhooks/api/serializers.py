from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.serializers import StrictCharField, StrictSerializer, at_least_one_member
from webhooks.models import DeliveryState, WebhookDelivery

EVENT_TYPES_HELP = (
    "Event names to deliver (customer names, or `sendrealm.*` system names from "
    '`GET /webhook-event-types`), or `["*"]` for every event.'
)


def _event_types_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=200, trim_whitespace=False),
        min_length=1,
        max_length=100,
        help_text=EVENT_TYPES_HELP,
        **kwargs,
    )


class WebhookEndpointSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    url = serializers.CharField()
    event_types = serializers.ListField(child=serializers.CharField())
    description = serializers.CharField(allow_null=True)
    disabled_at = serializers.DateTimeField(allow_null=True)
    disabled_reason = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class WebhookEndpointWithSecretSerializer(WebhookEndpointSerializer):
    """The endpoint and its signing secret, shown only when it is made or rotated."""

    secret = serializers.CharField(
        help_text="`whsec_` + base64 of 32 random bytes; shown only in this answer."
    )


class WebhookEndpointCreateSerializer(StrictSerializer):
    url = StrictCharField(max_length=2000, trim_whitespace=False)
    event_types = _event_types_field()
    description = StrictCharField(required=False, allow_null=True, max_length=2000)


class WebhookEndpointUpdateSerializer(StrictSerializer):
    body_rules = at_least_one_member()

    url = StrictCharField(required=False, max_length=2000, trim_whitespace=False)
    event_types = _event_types_field(required=False)
    description = StrictCharField(required=False, allow_null=True, max_length=2000)
    disabled = serializers.BooleanField(
        required=False,
        help_text="`false` re-enables a disabled endpoint; `true` disables it.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                "Give `url`, `event_types`, `description` or `disabled`."
            )
        return attrs


class WebhookActionBodySerializer(StrictSerializer):
    """No members: the body is empty or `{}`."""


class WebhookReplayRangeSerializer(StrictSerializer):
    since = serializers.DateTimeField()
    until = serializers.DateTimeField(required=False, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        until = attrs.get("until")
        if until is not None and until <= attrs["since"]:
            raise serializers.ValidationError({"until": "Must be after `since`."})
        return attrs


class WebhookReplayCountSerializer(serializers.Serializer[Any]):
    count = serializers.IntegerField(help_text="Deliveries queued again.")


class WebhookDeliverySerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    event_type = serializers.CharField()
    webhook_id = serializers.CharField()
    status = serializers.SerializerMethodField()
    attempts = serializers.IntegerField(source="attempt_count")
    last_status_code = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField(source="error", allow_null=True)
    next_attempt_at = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    delivered_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(serializers.ChoiceField(choices=DeliveryState.choices))
    def get_status(self, delivery: WebhookDelivery) -> str:
        return str(delivery.state)

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_next_attempt_at(self, delivery: WebhookDelivery) -> str | None:
        # Only a pending delivery has one (the kit keeps none once it is final).
        if delivery.state != DeliveryState.PENDING or delivery.next_attempt_at is None:
            return None
        return serializers.DateTimeField().to_representation(delivery.next_attempt_at)


class SystemEventTypeSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(help_text="The full name, `sendrealm.<family>.<what>`.")
    description = serializers.CharField()
    example = serializers.DictField(help_text="An example of the delivery's `data`.")
