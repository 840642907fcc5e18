from typing import Any

from rest_framework import serializers

from config.api.serializers import StrictSerializer
from messaging.models import SuppressionReason


class SuppressionSerializer(serializers.Serializer[Any]):
    email = serializers.CharField()
    reason = serializers.ChoiceField(choices=SuppressionReason.choices)
    created_at = serializers.DateTimeField()


class SuppressionCreateSerializer(StrictSerializer):
    email = serializers.CharField(max_length=320, trim_whitespace=False)
    reason = serializers.ChoiceField(
        choices=SuppressionReason.choices, required=False, default=SuppressionReason.MANUAL
    )
