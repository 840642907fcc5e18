"""Serializer building blocks shared by every app."""

from typing import Any

from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    """Rejects members it does not declare, so a misspelt field is an error, not a no-op."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {
                        name: [serializers.ErrorDetail("Unknown member.", code="unknown_member")]
                        for name in unknown
                    }
                )
        elif data is not None:
            raise serializers.ValidationError(
                {"": [serializers.ErrorDetail("Expected a JSON object.", code="invalid_type")]}
            )
        return super().to_internal_value(data)


class ErrorIssueSerializer(serializers.Serializer):
    code = serializers.CharField()
    path = serializers.CharField()
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.CharField()
    issues = ErrorIssueSerializer(many=True)


class ErrorEnvelopeSerializer(serializers.Serializer):
    """Every 4xx and 5xx answer."""

    status = serializers.IntegerField()
    error = ErrorSerializer()


class ListMetadataSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    items = serializers.IntegerField()
    limit = serializers.IntegerField()
    after = serializers.CharField(allow_null=True)
    next = serializers.CharField(allow_null=True)
    has_more = serializers.BooleanField()
