import json
from email.utils import parseaddr
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from rest_framework import serializers

from config.api.serializers import JsonObjectField, StrictCharField, StrictSerializer
from messaging.models.templates import Channel, VersionState

# Bounds of what a template may hold (sources, before rendering).
MAX_SUBJECT = 2_000
MAX_HTML = 512 * 1024
MAX_TEXT = 256 * 1024
MAX_TITLE = 2_000
MAX_BODY = 10_000
MAX_DATA_BYTES = 16 * 1024


def _storable(value: Any) -> bool:
    """False for text PostgreSQL cannot store: NUL characters and lone surrogates."""
    if isinstance(value, str):
        if "\x00" in value:
            return False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_storable(key) and _storable(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_storable(item) for item in value)
    return True


class TemplateTextField(StrictCharField):
    """A Liquid source: kept exactly as sent (no trimming), may be empty or null."""

    default_error_messages = {"unstorable": "Contains characters that cannot be stored."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not _storable(value):
            self.fail("unstorable")
        return value


class PushDataField(JsonObjectField):
    """`data` of a push template: an object whose strings (at any depth) are Liquid."""

    default_error_messages = {
        "too_large": f"Must be at most {MAX_DATA_BYTES} bytes as JSON.",
        "unstorable": "Contains characters that cannot be stored.",
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if not _storable(value):
            self.fail("unstorable")
        if len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()) > (
            MAX_DATA_BYTES
        ):
            self.fail("too_large")
        return value


class FromAddressField(StrictCharField):
    """An address, optionally with a display name: `Ada <ada@example.com>`."""

    default_error_messages = {
        "address": "Must be an address, optionally with a name: `Name <a@b.c>`."
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("max_length", 320)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        _, address = parseaddr(value)
        try:
            validate_email(address)
        except DjangoValidationError:
            self.fail("address")
        return value


class _TemplateContentSerializer(StrictSerializer):
    subject = TemplateTextField(max_length=MAX_SUBJECT)
    html = TemplateTextField(max_length=MAX_HTML)
    text = TemplateTextField(max_length=MAX_TEXT)
    title = TemplateTextField(max_length=MAX_TITLE)
    body = TemplateTextField(max_length=MAX_BODY)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.data; the stubs cannot see that.
    data = PushDataField()  # type: ignore[assignment]

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        # `from` is a Python keyword: declared here, stored as `from_email`.
        fields["from"] = FromAddressField(source="from_email")
        return fields


class TemplateCreateSerializer(_TemplateContentSerializer):
    name = StrictCharField(min_length=1, max_length=200)
    channel = serializers.ChoiceField(choices=Channel.choices)


class TemplateUpdateSerializer(_TemplateContentSerializer):
    name = StrictCharField(required=False, min_length=1, max_length=200)

    def to_internal_value(self, data: Any) -> Any:
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as error:
            # `channel` is unknown here like any other member, but says why.
            if isinstance(error.detail, dict) and "channel" in error.detail:
                error.detail["channel"] = [
                    serializers.ErrorDetail(
                        "A template's channel cannot change; create another template.",
                        code="read_only",
                    )
                ]
            raise

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                "Give at least one of `name`, `from` or the content members."
            )
        return attrs


class PreviewEventSerializer(StrictSerializer):
    event = StrictCharField(min_length=1, max_length=200, trim_whitespace=False)
    payload = JsonObjectField(required=False)


class TemplatePreviewSerializer(StrictSerializer):
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.data; the stubs cannot see that.
    data = JsonObjectField(required=False)  # type: ignore[assignment]
    contact_id = serializers.UUIDField(required=False)
    event = PreviewEventSerializer(required=False)
    version_id = serializers.UUIDField(required=False)


class TemplateSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    name = serializers.CharField()
    channel = serializers.ChoiceField(choices=Channel.choices)
    draft_version_id = serializers.UUIDField(allow_null=True)
    published_version_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    deleted_at = serializers.DateTimeField(allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        # `from` (a Python keyword) goes right after `channel`.
        fields: dict[str, serializers.Field[Any, Any, Any, Any]] = {}
        for name, field in super().get_fields().items():
            fields[name] = field
            if name == "channel":
                fields["from"] = serializers.CharField(source="from_email", allow_null=True)
        return fields


class TemplateVersionSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    template_id = serializers.UUIDField()
    version_number = serializers.IntegerField()
    state = serializers.ChoiceField(choices=VersionState.choices)
    subject = serializers.CharField(allow_null=True)
    html = serializers.CharField(allow_null=True)
    text = serializers.CharField(allow_null=True)
    title = serializers.CharField(allow_null=True)
    body = serializers.CharField(allow_null=True)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.data; the stubs cannot see that.
    data = serializers.JSONField(allow_null=True)  # type: ignore[assignment]
    restored_from_version_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    published_at = serializers.DateTimeField(allow_null=True)


class RenderedEmailSerializer(serializers.Serializer[Any]):
    subject = serializers.CharField(allow_null=True)
    html = serializers.CharField(allow_null=True)
    text = serializers.CharField(allow_null=True)


class RenderedPushSerializer(serializers.Serializer[Any]):
    title = serializers.CharField(allow_null=True)
    body = serializers.CharField(allow_null=True)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.data; the stubs cannot see that.
    data = serializers.JSONField(allow_null=True)  # type: ignore[assignment]


class TemplatePreviewResultSerializer(serializers.Serializer[Any]):
    """`rendered` holds subject, html and text (email) or title, body and data (push)."""

    rendered = serializers.JSONField()
    undefined_variables = serializers.ListField(child=serializers.CharField())
