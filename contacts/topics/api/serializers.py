from typing import Any

from rest_framework import serializers

from config.api.serializers import StrictCharField, StrictSerializer, at_least_one_member
from contacts.topics.models import SubscriptionSource, SubscriptionStatus
from contacts.topics.selectors import TopicStatus


class TopicSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    default_status = serializers.ChoiceField(choices=SubscriptionStatus.choices)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class TopicCreateSerializer(StrictSerializer):
    name = StrictCharField(min_length=1, max_length=200)
    description = StrictCharField(required=False, allow_null=True, max_length=2000)
    default_status = serializers.ChoiceField(choices=SubscriptionStatus.choices, required=False)


class TopicUpdateSerializer(StrictSerializer):
    body_rules = at_least_one_member()

    name = StrictCharField(required=False, min_length=1, max_length=200)
    description = StrictCharField(required=False, allow_null=True, max_length=2000)
    default_status = serializers.ChoiceField(choices=SubscriptionStatus.choices, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                "Give at least one of `name`, `description` or `default_status`."
            )
        return attrs


class TopicStatusSerializer(serializers.Serializer[Any]):
    """A contact's status for one topic; `source` and `changed_at` are null while the
    topic's default applies."""

    topic_id = serializers.UUIDField()
    topic_name = serializers.CharField()
    contact_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=SubscriptionStatus.choices)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Field.source; the stubs cannot see that.
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=SubscriptionSource.choices, allow_null=True
    )
    changed_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance: TopicStatus) -> dict[str, Any]:
        return super().to_representation(
            {
                "topic_id": instance.topic.id,
                "topic_name": instance.topic.name,
                "contact_id": instance.contact_id,
                "status": instance.status,
                "source": instance.source,
                "changed_at": instance.changed_at,
            }
        )


class SubscriptionChangeSerializer(StrictSerializer):
    topic_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=SubscriptionStatus.choices)


class SubscriptionsSetSerializer(StrictSerializer):
    # With many=True DRF builds a ListSerializer, which takes max_length; the stub types
    # the child's constructor.
    topics = SubscriptionChangeSerializer(  # type: ignore[call-arg]
        many=True, allow_empty=False, max_length=100
    )
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Field.source; the stubs cannot see that.
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=SubscriptionSource.choices, required=False
    )
