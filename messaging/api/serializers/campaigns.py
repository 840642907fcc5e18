from typing import Any

from rest_framework import serializers

from config.api.serializers import (
    StrictCharField,
    StrictSerializer,
    at_least_one_member,
    exactly_one_of,
)
from messaging.models import CampaignStatus, Channel

NAME_LENGTH = 200
# A push app's id (UUID) or its public id (`app_...`).
APP_REF_LENGTH = 64


def _sender_field(**kwargs: Any) -> serializers.Field[Any, Any, Any, Any]:
    return StrictCharField(
        max_length=320,
        help_text="The sender, `a@b.c` or `Name <a@b.c>`; null: the template's, else the "
        "project's `default_from`.",
        **kwargs,
    )


def _app_field(**kwargs: Any) -> serializers.Field[Any, Any, Any, Any]:
    return StrictCharField(
        min_length=1,
        max_length=APP_REF_LENGTH,
        help_text="The push app: its id or its public id.",
        **kwargs,
    )


class _CampaignCreate(StrictSerializer):
    body_rules = exactly_one_of("audience_id", "topic_id")

    name = StrictCharField(min_length=1, max_length=NAME_LENGTH)
    template_id = serializers.UUIDField(help_text="A template of the campaign's channel.")
    audience_id = serializers.UUIDField(required=False, help_text="Send to its contacts.")
    topic_id = serializers.UUIDField(
        required=False, help_text="Send to its subscribers (unsubscribed contacts are skipped)."
    )
    scheduled_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When sending starts once approved and sent (future, with an offset); "
        "null: at once.",
    )
    transactional = serializers.BooleanField(
        required=False,
        help_text="True: messages ignore the project's frequency caps and quiet hours (never "
        "suppression) and are not counted against the caps. Default false.",
    )


class EmailCampaignCreateSerializer(_CampaignCreate):
    # `from` is a keyword in Python: added under its JSON name.
    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        fields["from"] = _sender_field(required=False, allow_null=True)
        return fields


class PushCampaignCreateSerializer(_CampaignCreate):
    app_id = _app_field()


class _CampaignUpdate(StrictSerializer):
    # Some member, and at most one of the two targets (naming one replaces the other).
    body_rules = {**at_least_one_member(), "not": {"required": ["audience_id", "topic_id"]}}

    name = StrictCharField(required=False, min_length=1, max_length=NAME_LENGTH)
    template_id = serializers.UUIDField(required=False)
    audience_id = serializers.UUIDField(
        required=False, help_text="Send to this audience instead (clears `topic_id`)."
    )
    topic_id = serializers.UUIDField(
        required=False, help_text="Send to this topic instead (clears `audience_id`)."
    )
    scheduled_at = serializers.DateTimeField(required=False, allow_null=True)
    transactional = serializers.BooleanField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                {"": ["Give at least one member to change."]}, code="empty"
            )
        if "audience_id" in attrs and "topic_id" in attrs:
            raise serializers.ValidationError(
                {"topic_id": ["Give `audience_id` or `topic_id`, not both."]}, code="both"
            )
        return attrs


class EmailCampaignUpdateSerializer(_CampaignUpdate):
    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        fields["from"] = _sender_field(required=False, allow_null=True)
        return fields


class PushCampaignUpdateSerializer(_CampaignUpdate):
    app_id = _app_field(required=False)


class CampaignStatsSerializer(serializers.Serializer[Any]):
    """Every recipient counted once: by its message's state, or as `suppressed`
    (skipped); `opened` and `clicked` count among the sent ones."""

    queued = serializers.IntegerField()
    sent = serializers.IntegerField()
    delivered = serializers.IntegerField()
    failed = serializers.IntegerField()
    suppressed = serializers.IntegerField()
    opened = serializers.IntegerField()
    clicked = serializers.IntegerField()


class CampaignSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    name = serializers.CharField()
    channel = serializers.ChoiceField(choices=Channel.choices)
    status = serializers.ChoiceField(choices=CampaignStatus.choices)
    template_id = serializers.UUIDField()
    template_version_id = serializers.UUIDField(
        allow_null=True, help_text="The version approval froze; null before approval."
    )
    audience_id = serializers.UUIDField(allow_null=True)
    topic_id = serializers.UUIDField(allow_null=True)
    app_id = serializers.UUIDField(allow_null=True)
    # Declared as `from` below.
    scheduled_at = serializers.DateTimeField(allow_null=True)
    transactional = serializers.BooleanField(
        help_text="Sent past the project's frequency caps and quiet hours."
    )
    recipient_count = serializers.IntegerField(
        allow_null=True, help_text="Recipients counted at approval; null before."
    )
    review_note = serializers.CharField(
        allow_null=True, help_text="Why staff sent the campaign back to draft."
    )
    submitted_at = serializers.DateTimeField(allow_null=True)
    approved_at = serializers.DateTimeField(allow_null=True)
    sent_at = serializers.DateTimeField(allow_null=True)
    canceled_at = serializers.DateTimeField(allow_null=True)
    stats = CampaignStatsSerializer()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    deleted_at = serializers.DateTimeField(allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        ordered: dict[str, serializers.Field[Any, Any, Any, Any]] = {}
        for name, field in fields.items():
            if name == "scheduled_at":
                ordered["from"] = serializers.CharField(source="from_email", allow_null=True)
            ordered[name] = field
        return ordered
