import re
import zoneinfo
from email.utils import parseaddr
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.durations import parse_duration
from config.api.serializers import StrictCharField, StrictSerializer, at_least_one_member
from config.runtime.clock import iso_utc
from tenancy.models import EmailNormalization, Project

# The project's policy members, in the order the API writes them.
POLICY_NAMES = (
    "event_payload_limit_bytes",
    "contact_fields_limit_bytes",
    "event_retention_days",
    "run_retention_days",
    "wait_retention_days",
    "prepared_action_ttl_seconds",
    "email_normalization",
    "default_from",
    "track_opens",
    "track_clicks",
    "event_retry_base_seconds",
    "event_retry_factor",
    "event_retry_cap_seconds",
    "event_retry_max_attempts",
    "frequency_caps",
    "quiet_hours",
    "default_timezone",
)


def policies_data(project: Project) -> dict[str, Any]:
    """A project's policies as the API writes them (PoliciesSerializer documents the shape)."""
    data = {name: getattr(project, name) for name in POLICY_NAMES}
    data["default_from"] = data["default_from"] or None
    return data


def project_data(project: Project) -> dict[str, Any]:
    """A project as the API writes it (ProjectSerializer documents the shape): built by
    hand, as every answer read on each request is, because a serializer instance costs
    more than the rest of the request."""
    return {
        "id": str(project.id),
        "name": project.name,
        "team_id": str(project.team_id),
        "policies": policies_data(project),
        "created_at": iso_utc(project.created_at),
        "updated_at": iso_utc(project.updated_at),
    }


# The channels a frequency cap counts (messaging's `Channel`, spelt here: tenancy sits below).
CAP_CHANNELS = (("email", "Email"), ("push", "Push"))
MAX_CAPS = 10
_CLOCK_TIME = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]")


class FrequencyCapSerializer(StrictSerializer):
    """At most `max` messages of `channel` to one contact in any `per` (sliding)."""

    channel = serializers.ChoiceField(choices=CAP_CHANNELS)
    max = serializers.IntegerField(min_value=1, max_value=10000)
    per = StrictCharField(
        max_length=40, help_text="An ISO 8601 duration (`PT1H`, `P1D`, `P1W`), 1 s to 366 days."
    )

    def validate_per(self, value: str) -> str:
        if parse_duration(value) is None:
            raise serializers.ValidationError(
                "Must be an ISO 8601 duration in weeks, days, hours, minutes and seconds, "
                "from one second to 366 days, such as `PT1H`, `P1D` or `P1W`.",
                code="invalid_duration",
            )
        return value


class QuietHoursSerializer(StrictSerializer):
    """A daily window, in the contact's time zone, in which sends wait for its end."""

    start = StrictCharField(max_length=5, help_text="`HH:MM`, 24-hour clock.")
    end = StrictCharField(max_length=5, help_text="`HH:MM`; before `start`: past midnight.")

    def _clock(self, value: str) -> str:
        if not _CLOCK_TIME.fullmatch(value):
            raise serializers.ValidationError(
                "Must be a time of day `HH:MM` (00:00 to 23:59).", code="invalid_time"
            )
        return value

    def validate_start(self, value: str) -> str:
        return self._clock(value)

    def validate_end(self, value: str) -> str:
        return self._clock(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["start"] == attrs["end"]:
            raise serializers.ValidationError(
                {"end": ["Must differ from `start` (an empty window is `null`)."]}
            )
        return attrs


def valid_time_zone(value: str) -> bool:
    """Whether `value` is an IANA time zone name this service knows."""
    if value.startswith(("/", ".")) or ".." in value:
        return False
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


class PoliciesSerializer(serializers.Serializer[Any]):
    event_payload_limit_bytes = serializers.IntegerField(min_value=1024, max_value=1048576)
    contact_fields_limit_bytes = serializers.IntegerField(min_value=1024, max_value=1048576)
    event_retention_days = serializers.IntegerField(min_value=1, max_value=3650)
    run_retention_days = serializers.IntegerField(min_value=1, max_value=3650)
    wait_retention_days = serializers.IntegerField(min_value=1, max_value=3650)
    prepared_action_ttl_seconds = serializers.IntegerField(min_value=1, max_value=86400)
    email_normalization = serializers.ChoiceField(choices=EmailNormalization.choices)
    default_from = StrictCharField(allow_null=True, allow_blank=False, max_length=320)
    track_opens = serializers.BooleanField()
    track_clicks = serializers.BooleanField()
    # Null: the service default (2 s, factor 2, 600 s cap, 8 attempts).
    event_retry_base_seconds = serializers.FloatField(
        allow_null=True, min_value=0.1, max_value=3600
    )
    event_retry_factor = serializers.FloatField(allow_null=True, min_value=1, max_value=10)
    event_retry_cap_seconds = serializers.FloatField(allow_null=True, min_value=1, max_value=86400)
    event_retry_max_attempts = serializers.IntegerField(allow_null=True, min_value=1, max_value=50)
    frequency_caps = serializers.ListField(child=FrequencyCapSerializer(), max_length=MAX_CAPS)
    quiet_hours = QuietHoursSerializer(allow_null=True)
    default_timezone = StrictCharField(
        max_length=64, help_text="An IANA time zone name (`Europe/Berlin`); `UTC` by default."
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        data["default_from"] = data["default_from"] or None
        return data


class PoliciesInputSerializer(StrictSerializer, PoliciesSerializer):
    def validate_default_from(self, value: str | None) -> str | None:
        if value is None:
            return None
        _, address = parseaddr(value)
        try:
            validate_email(address)
        except DjangoValidationError:
            raise serializers.ValidationError(
                "Must be an address, optionally with a name: `Name <a@b.c>`."
            ) from None
        return value

    def validate_default_timezone(self, value: str) -> str:
        if not valid_time_zone(value):
            raise serializers.ValidationError(
                "Must be an IANA time zone name, such as `UTC` or `Europe/Berlin`.",
                code="invalid_time_zone",
            )
        return value

    def validate_frequency_caps(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen = set()
        for cap in value:
            key = (cap["channel"], parse_duration(cap["per"]))
            if key in seen:
                raise serializers.ValidationError(
                    "Two caps of one channel have the same `per`.", code="duplicate_cap"
                )
            seen.add(key)
        return value

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


# The serializers below document the API (OpenAPI) and validate input; answers are built
# by `project_data`.


class ProjectSerializer(serializers.ModelSerializer[Project]):
    team_id = serializers.UUIDField()
    policies = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["id", "name", "team_id", "policies", "created_at", "updated_at"]

    @extend_schema_field(PoliciesSerializer)
    def get_policies(self, project: Project) -> dict[str, Any]:
        return PoliciesSerializer(project).data


class ProjectUpdateSerializer(StrictSerializer):
    body_rules = at_least_one_member()

    name = StrictCharField(min_length=1, max_length=200, required=False)
    policies = PoliciesInputSerializer(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Give `name` or `policies`.")
        return attrs


class UsageCountsSerializer(serializers.Serializer[Any]):
    """One count per meter."""

    events_ingested = serializers.IntegerField()
    runs_started = serializers.IntegerField()
    waits_created = serializers.IntegerField()
    template_tests = serializers.IntegerField()
    emails_sent = serializers.IntegerField()
    push_sent = serializers.IntegerField()


class UsageDaySerializer(UsageCountsSerializer):
    date = serializers.DateField()


class PlanQuotasSerializer(serializers.Serializer[Any]):
    """Monthly quota per meter; null is unlimited."""

    events_ingested = serializers.IntegerField(allow_null=True)
    runs_started = serializers.IntegerField(allow_null=True)
    waits_created = serializers.IntegerField(allow_null=True)
    template_tests = serializers.IntegerField(allow_null=True)
    emails_sent = serializers.IntegerField(allow_null=True)
    push_sent = serializers.IntegerField(allow_null=True)


class UsagePlanSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    period_start = serializers.DateTimeField(help_text="Start of the current quota month (UTC).")
    quotas = PlanQuotasSerializer()


class UsageSerializer(serializers.Serializer[Any]):
    days = UsageDaySerializer(many=True)
    totals = UsageCountsSerializer()
    plan = UsagePlanSerializer()
