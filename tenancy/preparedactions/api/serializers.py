from typing import Any

from rest_framework import serializers

from config.api.serializers import StrictSerializer


class EmptyBodySerializer(serializers.Serializer[Any]):
    """A body that must be `{}`: any member is an error."""

    def to_internal_value(self, data: object) -> dict[str, object]:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"": ["Expected a JSON object."]})
        if data:
            raise serializers.ValidationError(
                {name: ["No members are allowed in this body."] for name in data}
            )
        return {}


class PreparedActionOutputSerializer(serializers.Serializer[Any]):
    prepared_action_id = serializers.UUIDField(source="id")
    operation = serializers.CharField()
    expires_at = serializers.DateTimeField()
    effects = serializers.JSONField()


class ExecuteInputSerializer(StrictSerializer):
    prepared_action_id = serializers.UUIDField()
    idempotency_key = serializers.CharField(min_length=1, max_length=255, trim_whitespace=False)
