"""Serializer building blocks shared by every app."""

from collections.abc import Mapping
from typing import Any, ClassVar

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.jsonvalues import stored_json_issues, text_problem


def exactly_one_of(*names: str) -> dict[str, Any]:
    """The OpenAPI rule for a body that needs exactly one of `names`."""
    return {"oneOf": [{"required": [name]} for name in names]}


def at_least_one_member() -> dict[str, Any]:
    """The OpenAPI rule for a body that needs some member (PATCH bodies)."""
    return {"minProperties": 1}


class StrictSerializer(serializers.Serializer[Any]):
    """Rejects members it does not declare, so a misspelt field is an error, not a no-op.

    Unknown members are reported together with the declared fields' own problems, so one
    answer lists everything wrong with the body. The OpenAPI document shows such bodies
    with `additionalProperties: false` (config.api.schema)."""

    # Rules across members that the fields cannot express, as OpenAPI schema keywords
    # (`exactly_one_of`, `at_least_one_member`). `validate` enforces them; this only tells
    # the document, so both change together.
    body_rules: ClassVar[dict[str, Any]] = {}

    def to_internal_value(self, data: Any) -> Any:
        if data is not None and not isinstance(data, Mapping):
            raise serializers.ValidationError(
                {"": [serializers.ErrorDetail("Expected a JSON object.", code="invalid_type")]}
            )
        unknown = {
            name: [serializers.ErrorDetail("Unknown member.", code="unknown_member")]
            for name in sorted(set(data or {}) - set(self.fields))
        }
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **unknown}) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


class StrictCharField(serializers.CharField):
    """A JSON string and nothing else: numbers are not silently turned into text. Text
    PostgreSQL cannot store (NUL characters, lone surrogates) is a 400, never a failed
    insert."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        problem = text_problem(data)
        if problem:
            raise serializers.ValidationError(problem, code="invalid_characters")
        return super().to_internal_value(data)


@extend_schema_field({"type": "boolean"})
class StrictBooleanField(serializers.BooleanField):
    """`true` or `false` and nothing else (no "yes", 1 or "true")."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictUUIDField(serializers.UUIDField):
    """A UUID written as a JSON string: a number is not read as the UUID of that integer."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


@extend_schema_field(OpenApiTypes.EMAIL)
class EmailMemberField(StrictCharField):
    """An email address; the service trims, validates and normalises it."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 320)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)


@extend_schema_field({"type": "object", "additionalProperties": True})
class JsonObjectField(serializers.JSONField):
    """A JSON object (not an array, string or number) that PostgreSQL can store: no NUL
    characters, lone surrogates or non-finite numbers, each reported at its own path."""

    default_error_messages = {"not_an_object": "Must be a JSON object."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            self.fail("not_an_object")
        value = super().to_internal_value(data)
        issues = stored_json_issues(value)
        if issues:
            # Keyed by the path inside the value; the handler prefixes the field's name.
            raise serializers.ValidationError(
                {
                    issue.path: [serializers.ErrorDetail(issue.message, code=issue.code)]
                    for issue in issues
                }
            )
        return value


class ErrorIssueSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    path = serializers.CharField()
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.CharField()
    issues = ErrorIssueSerializer(many=True)


class ErrorEnvelopeSerializer(serializers.Serializer[Any]):
    """Every 4xx and 5xx answer."""

    status = serializers.IntegerField()
    error = ErrorSerializer()


class ListMetadataSerializer(serializers.Serializer[Any]):
    total = serializers.IntegerField()
    items = serializers.IntegerField()
    limit = serializers.IntegerField()
    after = serializers.CharField(allow_null=True)
    next = serializers.CharField(allow_null=True)
    has_more = serializers.BooleanField()
