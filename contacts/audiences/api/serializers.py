from typing import Any

from rest_framework import serializers

from config.api.serializers import (
    EmailMemberField,
    JsonObjectField,
    StrictCharField,
    StrictSerializer,
    at_least_one_member,
    exactly_one_of,
)
from contacts.api.serializers import ContactSerializer
from contacts.audiences.models import PropertyType

PROPERTY_KEY_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"


class AudiencePropertySerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    audience_id = serializers.UUIDField()
    key = serializers.CharField()
    type = serializers.ChoiceField(choices=PropertyType.choices)
    description = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class AudienceSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    properties = AudiencePropertySerializer(many=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class AudienceCreateSerializer(StrictSerializer):
    name = StrictCharField(min_length=1, max_length=200)
    description = StrictCharField(required=False, allow_null=True, max_length=2000)


class AudienceUpdateSerializer(StrictSerializer):
    body_rules = at_least_one_member()

    name = StrictCharField(required=False, min_length=1, max_length=200)
    description = StrictCharField(required=False, allow_null=True, max_length=2000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Give `name` or `description`.")
        return attrs


class AudiencePropertyCreateSerializer(StrictSerializer):
    key = serializers.RegexField(
        PROPERTY_KEY_PATTERN,
        error_messages={
            "invalid": "Must start with a letter and hold up to 64 letters, digits or `_`."
        },
    )
    type = serializers.ChoiceField(choices=PropertyType.choices)
    description = StrictCharField(required=False, allow_null=True, max_length=2000)


class MembershipSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    audience_id = serializers.UUIDField()
    contact_id = serializers.UUIDField()
    contact = ContactSerializer()
    properties = JsonObjectField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class MembershipResultSerializer(MembershipSerializer):
    created = serializers.BooleanField()


class MemberAddSerializer(StrictSerializer):
    body_rules = exactly_one_of("contact_id", "email")

    contact_id = serializers.UUIDField(required=False)
    email = EmailMemberField(required=False)
    properties = JsonObjectField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("contact_id" in attrs) == ("email" in attrs):
            raise serializers.ValidationError("Give exactly one of `contact_id` or `email`.")
        return attrs
