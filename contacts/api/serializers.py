from collections.abc import Sequence
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
from config.runtime.clock import iso_utc
from contacts.models import Contact

MAX_FIELD_KEY_LENGTH = 100


def contact_data(contact: Contact) -> dict[str, Any]:
    """A contact as the API writes it (ContactSerializer documents the shape): built by
    hand, because a serializer instance per answer costs more than the rest of the request."""
    return {
        "id": str(contact.id),
        "email": contact.email,
        "external_id": contact.external_id,
        "fields": contact.fields,
        "created_at": iso_utc(contact.created_at),
        "updated_at": iso_utc(contact.updated_at),
        "deleted_at": iso_utc(contact.deleted_at) if contact.deleted_at is not None else None,
    }


def contacts_data(contacts: Sequence[Contact]) -> list[dict[str, Any]]:
    return [contact_data(contact) for contact in contacts]


class ContactFieldsField(JsonObjectField):
    """`fields`: an object whose keys are 1 to 100 characters long."""

    default_error_messages = {"bad_key": "Keys must be 1 to 100 characters long."}

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if any(not 1 <= len(key) <= MAX_FIELD_KEY_LENGTH for key in value):
            self.fail("bad_key")
        return value


class ContactSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    email = serializers.CharField(allow_null=True)
    external_id = serializers.CharField(allow_null=True)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.fields; the stubs cannot see that.
    fields = JsonObjectField()  # type: ignore[assignment]
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    deleted_at = serializers.DateTimeField(allow_null=True)


class ContactUpsertResultSerializer(ContactSerializer):
    created = serializers.BooleanField()


class ContactUpsertSerializer(StrictSerializer):
    email = EmailMemberField()
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.fields; the stubs cannot see that.
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
        if not attrs:
            raise serializers.ValidationError(
                {"email": ["Give `email` (or `external_id`)."]}, code="required"
            )
        if len(attrs) != 1:
            raise serializers.ValidationError("Give exactly one of `email` or `external_id`.")
        return attrs


class ContactUpdateSerializer(StrictSerializer):
    body_rules = at_least_one_member()

    email = EmailMemberField(required=False)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.fields; the stubs cannot see that.
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
