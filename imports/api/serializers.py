import json
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.serializers import StrictCharField, StrictSerializer
from imports import conf
from imports.models import AutomationEffects, ImportSource, ImportStatus, RowError, RowStatus
from imports.services.planning import CHANGES, CREATE, SKIP, UPDATE

MAPPING_DESCRIPTION = (
    "Column -> target: `email`, `external_id`, `fields.<name>`, `audience` or `topic`. "
    "`email` or `external_id` is required (it names each row's contact)."
)


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "minProperties": 1,
        "description": MAPPING_DESCRIPTION,
    }
)
class MappingField(serializers.JSONField):
    """A JSON object of column -> target; the service checks the targets."""

    default_error_messages = {"not_an_object": "Must be a JSON object of column -> target."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict) or not data:
            self.fail("not_an_object")
        return super().to_internal_value(data)


@extend_schema_field({"type": "string", "description": MAPPING_DESCRIPTION + " As JSON text."})
class MappingTextField(serializers.CharField):
    """The mapping as a JSON string (a multipart form field)."""

    default_error_messages = {"not_an_object": "Must be a JSON object of column -> target."}

    def to_internal_value(self, data: Any) -> Any:
        text = super().to_internal_value(data)
        try:
            value = json.loads(text)
        except ValueError:
            self.fail("not_an_object")
        if not isinstance(value, dict) or not value:
            self.fail("not_an_object")
        return value


@extend_schema_field({"type": "object", "additionalProperties": True})
class RowField(serializers.JSONField):
    """One row: an object of column -> value (values of any JSON type)."""

    default_error_messages = {"not_an_object": "Each row must be a JSON object."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            self.fail("not_an_object")
        return data


class RowsField(serializers.ListField):
    """The rows of a JSON import. Their number is checked before any row is, so a body of a
    million rows is refused at once; at most MAX_ROW_ISSUES bad rows are listed, then one
    issue at `rows` (`more_issues`) counts the rest."""

    MAX_ROW_ISSUES = 100

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, list) and len(data) > conf.max_json_rows():
            raise serializers.ValidationError(
                f"At most {conf.max_json_rows()} rows; upload larger imports as CSV.",
                code="max_length",
            )
        return super().to_internal_value(data)

    def run_child_validation(self, data: list[Any]) -> list[Any]:
        rows: list[Any] = []
        errors: dict[str, Any] = {}
        unlisted = 0
        for index, item in enumerate(data):
            try:
                rows.append(self.child.run_validation(item))
            except serializers.ValidationError as error:
                if len(errors) < self.MAX_ROW_ISSUES:
                    errors[str(index)] = error.detail
                else:
                    unlisted += 1
        if not errors:
            return rows
        if unlisted:
            # The key "" puts the issue at `rows` itself, after the rows listed.
            errors[""] = [
                serializers.ErrorDetail(
                    f"{unlisted} more rows are not valid; they are not listed.",
                    code="more_issues",
                )
            ]
        raise serializers.ValidationError(errors)


class ImportRowsSerializer(StrictSerializer):
    """An import of JSON rows."""

    rows = RowsField(child=RowField(), min_length=1, max_length=conf.DEFAULT_MAX_JSON_ROWS)
    mapping = MappingField()
    automation_effects = serializers.ChoiceField(
        choices=AutomationEffects.choices, default=AutomationEffects.SUPPRESS
    )


class ImportFileSerializer(StrictSerializer):
    """An import of a CSV file (multipart/form-data) whose first row is the header."""

    file = serializers.FileField(allow_empty_file=True)
    mapping = MappingTextField()
    automation_effects = serializers.ChoiceField(
        choices=AutomationEffects.choices, default=AutomationEffects.SUPPRESS
    )
    # Detected when absent: UTF-8 (with or without BOM), UTF-16 with a BOM, Windows-1252,
    # else Latin-1.
    encoding = StrictCharField(required=False, min_length=1, max_length=32)
    # Detected when absent among `,` `;` tab and `|`.
    delimiter = StrictCharField(required=False, min_length=1, max_length=1, trim_whitespace=False)

    def validate_delimiter(self, value: str) -> str:
        if value in '"\r\n' or (not value.isprintable() and value != "\t"):
            raise serializers.ValidationError("Not a usable delimiter.")
        return value


class ImportChangesSerializer(serializers.Serializer[Any]):
    """How many of each kind of change (exact, over every row)."""

    contacts_created = serializers.IntegerField(min_value=0)
    contacts_updated = serializers.IntegerField(min_value=0)
    properties_created = serializers.IntegerField(min_value=0)
    audiences_created = serializers.IntegerField(min_value=0)
    memberships_created = serializers.IntegerField(min_value=0)
    memberships_updated = serializers.IntegerField(min_value=0)
    subscriptions_created = serializers.IntegerField(min_value=0)
    subscriptions_updated = serializers.IntegerField(min_value=0)


class ImportSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=ImportStatus.choices)
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Field.source; the stubs cannot see that.
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=ImportSource.choices
    )
    filename = serializers.CharField(allow_null=True)
    encoding = serializers.CharField(allow_null=True)
    delimiter = serializers.CharField(allow_null=True)
    columns = serializers.ListField(child=serializers.CharField())
    mapping = serializers.DictField(child=serializers.CharField())
    automation_effects = serializers.ChoiceField(choices=AutomationEffects.choices)
    total_rows = serializers.IntegerField()
    valid_rows = serializers.IntegerField()
    invalid_rows = serializers.IntegerField()
    changes = ImportChangesSerializer(allow_null=True)
    prepared_action_id = serializers.UUIDField(allow_null=True)
    previewed_at = serializers.DateTimeField(allow_null=True)
    commit_rows = serializers.IntegerField()
    committed_rows = serializers.IntegerField()
    progress = serializers.FloatField(allow_null=True)
    last_error = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    committed_at = serializers.DateTimeField(allow_null=True)


class RowPlanSerializer(serializers.Serializer[Any]):
    """What a valid row would do (`changes` empty: nothing, and no events)."""

    action = serializers.ChoiceField(choices=[CREATE, UPDATE, SKIP])
    identity = serializers.CharField()
    resource_id = serializers.UUIDField(allow_null=True)
    version = serializers.CharField(allow_null=True)
    mapped = serializers.DictField()
    changes = serializers.ListField(child=serializers.ChoiceField(choices=list(CHANGES)))


class SampleRowSerializer(serializers.Serializer[Any]):
    row_number = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RowStatus.choices)
    error_code = serializers.ChoiceField(choices=RowError.choices, allow_null=True)
    result = RowPlanSerializer(allow_null=True)


class RowCountSerializer(serializers.Serializer[Any]):
    status = serializers.ChoiceField(choices=RowStatus.choices)
    rows = serializers.IntegerField(min_value=0)


class ImportEffectsSerializer(serializers.Serializer[Any]):
    import_id = serializers.UUIDField()
    valid_rows = serializers.IntegerField(min_value=0)
    invalid_rows = serializers.IntegerField(min_value=0)
    automation_effects = serializers.ChoiceField(choices=AutomationEffects.choices)
    changes = ImportChangesSerializer()


class ImportPreviewSerializer(serializers.Serializer[Any]):
    """The spec's Import preview: these members and no others."""

    import_id = serializers.UUIDField()
    prepared_action_id = serializers.UUIDField()
    operation = serializers.ChoiceField(choices=["imports.commit"])
    expires_at = serializers.DateTimeField()
    counts = RowCountSerializer(many=True)
    sample = serializers.ListField(child=SampleRowSerializer(), max_length=5)
    effects = ImportEffectsSerializer()
    changes = ImportChangesSerializer()
