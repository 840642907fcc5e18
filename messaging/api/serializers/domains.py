from typing import Any

from rest_framework import serializers

from config.api.serializers import StrictSerializer
from messaging.models import DomainStatus


class DomainRecordSerializer(serializers.Serializer[Any]):
    type = serializers.CharField()
    name = serializers.CharField()
    value = serializers.CharField()
    status = serializers.ChoiceField(choices=DomainStatus.choices)


class DomainSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=DomainStatus.choices)
    records = DomainRecordSerializer(many=True, source="records.all")
    dkim_selector = serializers.CharField()
    created_at = serializers.DateTimeField()
    verified_at = serializers.DateTimeField(allow_null=True)


class DomainCreateSerializer(StrictSerializer):
    # Checked as a domain name by the service (400 at `name`).
    name = serializers.CharField(max_length=300, trim_whitespace=False)


class DomainVerifySerializer(StrictSerializer):
    """No members: the body is empty or `{}`."""
