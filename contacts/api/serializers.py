import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

from rest_framework import serializers

from config.api.jsonvalues import serialised
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


class ContactShape(Protocol):
    """What an answer reads off a contact: a Contact, or the row an upsert returns
    (contacts.selectors.UpsertedContact)."""

    @property
    def id(self) -> uuid.UUID: ...
    @property
    def email(self) -> str | None: ...
    @property
    def external_id(self) -> str | None: ...
    @property
    def fields(self) -> Any: ...
    @property
    def created_at(self) -> dt.datetime: ...
    @property
    def updated_at(self) -> dt.datetime: ...
    @property
    def deleted_at(self) -> dt.datetime | None: ...


def contact_data(contact: ContactShape) -> dict[str, Any]:
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


# ContactUpsertSerializer's members (tests/contacts/test_contacts_api.py checks the two).
UPSERT_MEMBERS = frozenset({"email", "fields", "external_id"})
# The lengths the serializer's fields allow: the columns' own.
MAX_EMAIL_LENGTH: int = Contact._meta.get_field("email").max_length  # type: ignore[assignment]
MAX_EXTERNAL_ID_LENGTH: int = Contact._meta.get_field("external_id").max_length  # type: ignore[assignment]


def contact_upsert_input(data: Any) -> dict[str, Any]:
    """An upsert body as ContactUpsertSerializer validates it; a 400 envelope otherwise.

    The serializer costs more than the rest of an upsert's Python, so a body that plainly
    passes its every rule (the usual one: ASCII text, fields PostgreSQL can store) is
    taken here as it would take it, unchanged; anything else goes through the serializer,
    which accepts it or says what is wrong (tests/contacts/test_contacts_api.py holds the
    two to the same answers)."""
    if type(data) is dict and data.keys() <= UPSERT_MEMBERS and _plainly_valid(data):
        return data
    body = ContactUpsertSerializer(data=data)
    body.is_valid(raise_exception=True)
    return dict(body.validated_data)


def _plain_text(value: Any, max_length: int) -> bool:
    # StrictCharField without trimming: a string, not empty, not too long, and text that
    # PostgreSQL can store (ASCII without NUL here; other text is the serializer's to judge).
    return (
        type(value) is str
        and 0 < len(value) <= max_length
        and value.isascii()
        and "\x00" not in value
    )


def _plainly_valid(data: dict[str, Any]) -> bool:
    if not _plain_text(data.get("email"), MAX_EMAIL_LENGTH):
        return False
    if "external_id" in data:
        external_id = data["external_id"]
        if external_id is not None and not _plain_text(external_id, MAX_EXTERNAL_ID_LENGTH):
            return False
    if "fields" in data:
        fields = data["fields"]
        if type(fields) is not dict:
            return False
        if any(not 1 <= len(key) <= MAX_FIELD_KEY_LENGTH for key in fields):
            return False
        # ContactFieldsField's checks of the values (config.api.jsonvalues.stored_json_issues
        # finds nothing when the compact text is made, encodes and holds no NUL escape).
        try:
            text = serialised(fields)
            text.encode("utf-8")
        except (TypeError, ValueError):
            return False
        if "\\u0000" in text:
            return False
    return True


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
