from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.serializers import StrictSerializer, at_least_one_member, exactly_one_of

MAX_FIELD_KEY_LENGTH = 100


class StrictCharField(serializers.CharField):
    """A JSON string and nothing else: numbers are not silently turned into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


@extend_schema_field(OpenApiTypes.EMAIL)
class EmailMemberField(StrictCharField):
    """An email address; the service trims, validates and normalises it."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 320)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)


@extend_schema_field({"type": "object", "additionalProperties": True})
class JsonObjectField(serializers.JSONField):
    """A JSON object (not an array, string or number)."""

    default_error_messages = {"not_an_object": "Must be a JSON object."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            self.fail("not_an_object")
        return super().to_internal_value(data)


class ContactFieldsField(JsonObjectField):
    """`fields`: an object whose keys are 1 to 100 characters long."""

    default_error_messages = {"bad_key": "Keys must be 1 to 100 characters long."}

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if any(not 1 <= len(key) <= MAX_FIELD_KEY_LENGTH for key in value):
            self.fail("bad_key")
        return value


class ContactSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    email = serializers.CharField(allow_null=True)
    external_id = serializers.CharField(allow_null=True)
    fields = JsonObjectField()  # type: ignore[assignment]
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    deleted_at = serializers.DateTimeField(allow_null=True)


class ContactUpsertResultSerializer(ContactSerializer):
    created = serializers.BooleanField()


class ContactUpsertSerializer(StrictSerializer):
    email = EmailMemberField()
    fields = ContactFieldsField(required=False)  # type: ignore[assignment]
    external_id = StrictCharField(
        required=False, allow_null=True, min_length=1, max_length=255, trim_whitespace=False
    )


class ContactLookupSerializer(StrictSerializer):
    body_rules = exactly_one_of("email", "external_id")

    email = EmailMemberField(required=False)
    external_id = StrictCharField(
        required=False, min_length=1, max_length=255, trim_whitespace=False
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if len(attrs) != 1:
            raise serializers.ValidationError("Give exactly one of `email` or `external_id`.")
        return attrs


class ContactUpdateSerializer(StrictSerializer):
    body_rules = at_least_one_member()

    email = EmailMemberField(required=False)
    fields = ContactFieldsField(required=False)  # type: ignore[assignment]
    external_id = StrictCharField(
        required=False, allow_null=True, min_length=1, max_length=255, trim_whitespace=False
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                "Give at least one of `email`, `fields` or `external_id`."
            )
        return attrs
