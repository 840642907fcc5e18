from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.jsonvalues import json_size
from config.api.serializers import (
    EmailMemberField,
    JsonObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictSerializer,
    at_least_one_member,
)
from pushproviders.models import (
    ApnsEnvironment,
    Platform,
    ProviderStatus,
    PushDeliveryState,
    PushMessageStatus,
)
from pushproviders.readiness import provider_readiness
from pushproviders.services.sending import MAX_INSTALLATIONS

# Apps ------------------------------------------------------------------------------------


class PushAppSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    public_id = serializers.CharField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class PushAppCreateSerializer(StrictSerializer):
    name = StrictCharField(min_length=1, max_length=200)


class PushAppUpdateSerializer(StrictSerializer):
    body_rules = at_least_one_member()

    name = StrictCharField(required=False, min_length=1, max_length=200)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Give `name`.")
        return attrs


# Providers -------------------------------------------------------------------------------


class BlankAsNullField(serializers.CharField):
    """A stored setting: `null` while it is not set."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_null=True, **kwargs)

    def to_representation(self, value: Any) -> Any:
        return str(value) if value else None


class ReadinessSerializer(serializers.Serializer[Any]):
    ready = serializers.BooleanField()
    missing = serializers.ListField(child=serializers.CharField())

    def to_representation(self, instance: Any) -> dict[str, Any]:
        readiness = provider_readiness(instance)
        return {"ready": readiness.ready, "missing": readiness.missing}


class PushProviderSerializer(serializers.Serializer[Any]):
    """Public settings and readiness; secrets are never part of it."""

    id = serializers.UUIDField()
    app_id = serializers.UUIDField()
    name = serializers.CharField()
    platform = serializers.ChoiceField(choices=Platform.choices)
    status = serializers.ChoiceField(choices=ProviderStatus.choices)
    fcm_project_id = BlankAsNullField()
    android_package_name = BlankAsNullField()
    apns_key_id = BlankAsNullField()
    apns_team_id = BlankAsNullField()
    apns_bundle_id = BlankAsNullField()
    apns_environment = BlankAsNullField()
    web_vapid_public_key = BlankAsNullField()
    web_vapid_subject = BlankAsNullField()
    readiness = ReadinessSerializer(source="*")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


@extend_schema_field(
    {
        "oneOf": [
            {"type": "object", "additionalProperties": True},
            {"type": "string"},
        ],
        "nullable": True,
        "writeOnly": True,
        "description": "The service account JSON, as an object or as a JSON string.",
    }
)
class ServiceAccountField(serializers.Field[Any, Any, Any, Any]):
    default_error_messages = {"invalid": "Must be a JSON object or a JSON string."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, (dict, str)):
            self.fail("invalid")
        return data


def _setting(max_length: int) -> StrictCharField:
    return StrictCharField(
        required=False, allow_null=True, max_length=max_length, trim_whitespace=False
    )


def _secret(max_length: int) -> StrictCharField:
    return StrictCharField(
        required=False,
        allow_null=True,
        max_length=max_length,
        trim_whitespace=False,
        write_only=True,
    )


class PushProviderWriteSerializer(StrictSerializer):
    """The settings of every platform; the service refuses those of another platform."""

    name = StrictCharField(required=False, min_length=1, max_length=200)
    status = serializers.ChoiceField(choices=ProviderStatus.choices, required=False)
    service_account = ServiceAccountField(required=False, allow_null=True, write_only=True)
    android_package_name = _setting(255)
    apns_key_id = _setting(10)
    apns_team_id = _setting(10)
    apns_private_key = _secret(10_000)
    apns_bundle_id = _setting(155)
    apns_environment = serializers.ChoiceField(
        choices=ApnsEnvironment.choices, required=False, allow_null=True
    )
    web_vapid_public_key = _setting(100)
    web_vapid_private_key = _secret(100)
    web_vapid_subject = _setting(500)
    generate_vapid_keys = StrictBooleanField(required=False)


class PushProviderCreateSerializer(PushProviderWriteSerializer):
    platform = serializers.ChoiceField(choices=Platform.choices)


class PushProviderUpdateSerializer(PushProviderWriteSerializer):
    body_rules = at_least_one_member()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Give at least one setting.")
        return attrs


# Installations ---------------------------------------------------------------------------


class PushInstallationSerializer(serializers.Serializer[Any]):
    """The token is never part of it."""

    id = serializers.UUIDField()
    app_id = serializers.UUIDField()
    platform = serializers.ChoiceField(choices=Platform.choices)
    contact_id = serializers.UUIDField()
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField()


class SubscriptionKeysSerializer(StrictSerializer):
    p256dh = StrictCharField(max_length=200, trim_whitespace=False)
    auth = StrictCharField(max_length=100, trim_whitespace=False)


class SubscriptionSerializer(StrictSerializer):
    endpoint = StrictCharField(max_length=4096, trim_whitespace=False)
    keys = SubscriptionKeysSerializer()


class PushInstallationCreateSerializer(StrictSerializer):
    body_rules = {
        "allOf": [
            {"oneOf": [{"required": ["token"]}, {"required": ["subscription"]}]},
            {"oneOf": [{"required": ["contact_id"]}, {"required": ["email"]}]},
        ]
    }

    # The app's uuid or its public id.
    app_id = StrictCharField(max_length=64)
    platform = serializers.ChoiceField(choices=Platform.choices)
    token = StrictCharField(required=False, min_length=1, max_length=4096, trim_whitespace=False)
    subscription = SubscriptionSerializer(required=False)
    contact_id = serializers.UUIDField(required=False)
    email = EmailMemberField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("token" in attrs) == ("subscription" in attrs):
            raise serializers.ValidationError("Give exactly one of `token` or `subscription`.")
        if ("contact_id" in attrs) == ("email" in attrs):
            raise serializers.ValidationError("Give exactly one of `contact_id` or `email`.")
        return attrs


# Sending -------------------------------------------------------------------------------

# Providers refuse notifications much past 4 KB, so larger `data` is refused at once.
MAX_DATA_BYTES = 4096


class PushDataField(JsonObjectField):
    """`data`: a JSON object; strings go as they are, other values as their JSON."""

    default_error_messages = {
        **JsonObjectField.default_error_messages,
        "too_large": f"At most {MAX_DATA_BYTES} bytes as compact JSON (providers refuse more).",
    }

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if json_size(value) > MAX_DATA_BYTES:
            self.fail("too_large")
        return value


class PushSendSerializer(StrictSerializer):
    body_rules = {
        "allOf": [
            {"oneOf": [{"required": ["contact_id"]}, {"required": ["installation_ids"]}]},
            {
                "oneOf": [
                    {"required": ["template_id"]},
                    {"anyOf": [{"required": ["title"]}, {"required": ["body"]}]},
                ]
            },
        ]
    }

    # The app's uuid or its public id.
    app_id = StrictCharField(max_length=64)
    contact_id = serializers.UUIDField(required=False)
    installation_ids = serializers.ListField(
        child=serializers.UUIDField(), required=False, min_length=1, max_length=MAX_INSTALLATIONS
    )
    template_id = serializers.UUIDField(required=False)
    title = StrictCharField(required=False, min_length=1, max_length=2000, trim_whitespace=False)
    body = StrictCharField(required=False, min_length=1, max_length=10_000, trim_whitespace=False)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.data; the stubs cannot see that.
    data = PushDataField(required=False)  # type: ignore[assignment]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("contact_id" in attrs) == ("installation_ids" in attrs):
            raise serializers.ValidationError(
                "Give exactly one of `contact_id` or `installation_ids`."
            )
        inline = "title" in attrs or "body" in attrs
        if ("template_id" in attrs) == inline:
            raise serializers.ValidationError(
                "Give exactly one of `template_id` or inline `title`/`body`."
            )
        return attrs


class PushTestSerializer(StrictSerializer):
    installation_id = serializers.UUIDField()
    title = StrictCharField(required=False, min_length=1, max_length=2000, trim_whitespace=False)
    body = StrictCharField(required=False, min_length=1, max_length=10_000, trim_whitespace=False)


class PushDeliverySerializer(serializers.Serializer[Any]):
    installation_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=PushDeliveryState.choices, source="state")
    provider_message_id = serializers.CharField(allow_null=True)
    error = serializers.CharField(allow_null=True)


class PushMessageSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    template_id = serializers.UUIDField(allow_null=True)
    title = serializers.CharField(allow_null=True)
    body = serializers.CharField(allow_null=True)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.data; the stubs cannot see that.
    data = serializers.DictField(child=serializers.CharField())  # type: ignore[assignment]
    status = serializers.ChoiceField(choices=PushMessageStatus.choices)
    deliveries = PushDeliverySerializer(many=True, source="deliveries_in_order")
    created_at = serializers.DateTimeField()
    sent_at = serializers.DateTimeField(allow_null=True)


class PushOpenSerializer(StrictSerializer):
    installation_id = serializers.UUIDField()


class PushOpenResultSerializer(serializers.Serializer[Any]):
    push_id = serializers.UUIDField()
    installation_id = serializers.UUIDField()
    opened_at = serializers.DateTimeField()
    # True when the open was reported before (the event was recorded the first time).
    duplicate = serializers.BooleanField()
