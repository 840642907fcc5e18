from typing import Any

from rest_framework import serializers

from config.api.serializers import (
    StrictBooleanField,
    StrictCharField,
    StrictSerializer,
    StrictUUIDField,
    at_least_one_member,
)
from messaging.selectors.preferences import Preferences, is_subscribed, topic_key

# A PATCH may send back every topic GET listed; a project with more is changed in parts.
MAX_TOPICS = 1000


class PreferenceTopicSerializer(serializers.Serializer[Any]):
    topic_id = serializers.UUIDField()
    key = serializers.CharField()
    name = serializers.CharField()
    subscribed = serializers.BooleanField()


class PreferencesSerializer(serializers.Serializer[Any]):
    """A contact's status for every topic of its project (oldest first), and whether no
    email goes to its address."""

    topics = PreferenceTopicSerializer(many=True)
    unsubscribed_all = serializers.BooleanField()

    def to_representation(self, instance: Preferences) -> dict[str, Any]:
        return super().to_representation(
            {
                "topics": [
                    {
                        "topic_id": status.topic.id,
                        "key": topic_key(status),
                        "name": status.topic.name,
                        "subscribed": is_subscribed(status),
                    }
                    for status in instance.topics
                ],
                "unsubscribed_all": instance.unsubscribed_all,
            }
        )


class PreferenceTopicChangeSerializer(StrictSerializer):
    """One topic to change. `key` and `name` are accepted so that an item of GET can be
    sent back as it is; they change nothing (a topic is renamed with PATCH /topics/{id})."""

    topic_id = StrictUUIDField()
    subscribed = StrictBooleanField()
    key = StrictCharField(required=False, max_length=200)
    name = StrictCharField(required=False, max_length=200)


class PreferencesUpdateSerializer(StrictSerializer):
    body_rules = at_least_one_member()

    # With many=True DRF builds a ListSerializer, which takes max_length; the stub types
    # the child's constructor.
    topics = PreferenceTopicChangeSerializer(  # type: ignore[call-arg]
        many=True, required=False, max_length=MAX_TOPICS
    )
    unsubscribed_all = StrictBooleanField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Give `topics`, `unsubscribed_all` or both.")
        return attrs
