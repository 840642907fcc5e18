from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.serializers import JsonObjectField, StrictCharField, StrictSerializer
from messaging.models import EmailStatus
from messaging.services.emails import MAX_RECIPIENTS


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}, "maxItems": MAX_RECIPIENTS},
        ]
    }
)
class RecipientsField(serializers.Field[Any, Any, Any, Any]):
    """`to`: one address or a list of them (each `a@b.c` or `Name <a@b.c>`)."""

    default_error_messages = {
        "invalid": "Must be an address or a list of addresses.",
        "too_many": f"At most {MAX_RECIPIENTS} recipients.",
        "empty": "Give at least one address.",
    }

    def to_internal_value(self, data: Any) -> list[str]:
        values = [data] if isinstance(data, str) else data
        if not isinstance(values, list):
            self.fail("invalid")
        if not values:
            self.fail("empty")
        if len(values) > MAX_RECIPIENTS:
            self.fail("too_many")
        problems = {
            str(index): ["Must be a string."]
            for index, value in enumerate(values)
            if not isinstance(value, str) or len(value) > 320
        }
        if problems:
            raise serializers.ValidationError(problems)
        return list(values)

    def to_representation(self, value: Any) -> Any:
        return value


class EmailCreateSerializer(StrictSerializer):
    # `from` is a keyword in Python: declared below under its JSON name.
    to = RecipientsField(required=False)
    subject = StrictCharField(required=False, max_length=998, trim_whitespace=False)
    html = StrictCharField(required=False, max_length=2_000_000, trim_whitespace=False)
    text = StrictCharField(required=False, max_length=2_000_000, trim_whitespace=False)
    template_id = serializers.UUIDField(required=False)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.data; the stubs cannot see that.
    data = JsonObjectField(required=False)  # type: ignore[assignment]
    contact_id = serializers.UUIDField(required=False)
    tags = serializers.ListField(
        child=StrictCharField(min_length=1, max_length=100), required=False, max_length=20
    )
    reply_to = StrictCharField(required=False, max_length=320)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        fields["from"] = StrictCharField(required=False, max_length=320)
        return fields


class EmailSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    # Declared as `from` below.
    to = serializers.ListField(child=serializers.CharField())
    subject = serializers.CharField()
    status = serializers.ChoiceField(choices=EmailStatus.choices)
    template_id = serializers.UUIDField(allow_null=True)
    template_version_id = serializers.UUIDField(allow_null=True)
    tags = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()
    sent_at = serializers.DateTimeField(allow_null=True)
    delivered_at = serializers.DateTimeField(allow_null=True)
    opened_at = serializers.DateTimeField(allow_null=True)
    clicked_at = serializers.DateTimeField(allow_null=True)
    bounced_at = serializers.DateTimeField(allow_null=True)
    last_error = serializers.CharField(allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        ordered = {"id": fields.pop("id"), "from": serializers.CharField(source="from_email")}
        ordered.update(fields)
        return ordered


class TemplateTestSerializer(StrictSerializer):
    to = StrictCharField(required=False, max_length=320)
    installation_id = serializers.UUIDField(required=False)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Serializer.data; the stubs cannot see that.
    data = JsonObjectField(required=False)  # type: ignore[assignment]
    contact_id = serializers.UUIDField(required=False)


class TemplateTestResultSerializer(serializers.Serializer[Any]):
    """The email of an email template's test, or the push message of a push template's;
    the other member is null."""

    email_id = serializers.UUIDField(allow_null=True)
    push_id = serializers.UUIDField(allow_null=True)
