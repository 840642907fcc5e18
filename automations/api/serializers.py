from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from automations.models import (
    Automation,
    AutomationStatus,
    AutomationVersionState,
    ExecutionMode,
    IdentityType,
    RunStatus,
    StepStatus,
    StepType,
    TerminalReason,
    WaitStatus,
)
from config.api.serializers import (
    EmailMemberField,
    JsonObjectField,
    StrictCharField,
    StrictSerializer,
    exactly_one_of,
)

DEFINITION_HELP = (
    "The automation's definition: `trigger`, `start`, `steps`, `settings`. Its JSON Schema is "
    "served at `GET /automations/definition-schema`; the graph checks beyond it are listed "
    "there."
)


class AutomationCreateSerializer(StrictSerializer):
    name = StrictCharField(min_length=1, max_length=200)
    description = StrictCharField(
        required=False, allow_null=True, allow_blank=True, max_length=2000
    )
    definition = JsonObjectField(help_text=DEFINITION_HELP)
    editor_layout = JsonObjectField(
        required=False, allow_null=True, help_text="Stored and answered as given."
    )


class AutomationUpdateSerializer(StrictSerializer):
    """Any of the members; `definition` and `editor_layout` edit the draft."""

    body_rules = {"minProperties": 1}

    name = StrictCharField(required=False, min_length=1, max_length=200)
    description = StrictCharField(
        required=False, allow_null=True, allow_blank=True, max_length=2000
    )
    definition = JsonObjectField(required=False, help_text=DEFINITION_HELP)
    editor_layout = JsonObjectField(required=False, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                "Give at least one of `name`, `description`, `definition` or `editor_layout`."
            )
        return attrs


class AutomationSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=AutomationStatus.choices)
    current_draft_version_id = serializers.UUIDField(allow_null=True)
    current_published_version_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    deleted_at = serializers.DateTimeField(allow_null=True)


class AutomationVersionSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    automation_id = serializers.UUIDField()
    version_number = serializers.IntegerField()
    state = serializers.ChoiceField(choices=AutomationVersionState.choices)
    definition = JsonObjectField()
    editor_layout = JsonObjectField(allow_null=True)
    published_at = serializers.DateTimeField(allow_null=True)
    restored_from_version_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class RunCountsSerializer(serializers.Serializer[Any]):
    """Live runs of the automation by status (test runs are not counted)."""

    pending = serializers.IntegerField()
    running = serializers.IntegerField()
    waiting = serializers.IntegerField()
    completed = serializers.IntegerField()
    failed = serializers.IntegerField()
    canceled = serializers.IntegerField()
    holdout = serializers.IntegerField()


class AutomationDetailSerializer(AutomationSerializer):
    current_draft_version = AutomationVersionSerializer(allow_null=True)
    current_published_version = AutomationVersionSerializer(allow_null=True)
    versions = AutomationVersionSerializer(many=True, source="versions.all")
    run_counts = serializers.SerializerMethodField()

    @extend_schema_field(RunCountsSerializer)
    def get_run_counts(self, automation: Automation) -> dict[str, int]:
        # Annotated by automation_detail_get.
        return {
            status: getattr(automation, f"run_count_{status}", 0) for status in RunStatus.values
        }


class CorrelationSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    value = serializers.CharField()


class RunStepSerializer(serializers.Serializer[Any]):
    key = serializers.CharField(source="step_key")
    type = serializers.ChoiceField(choices=StepType.choices)
    status = serializers.ChoiceField(choices=StepStatus.choices)
    started_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    email_id = serializers.UUIDField(allow_null=True)
    push_id = serializers.UUIDField(allow_null=True)
    outcome = serializers.CharField(
        allow_null=True,
        help_text="Which way the step went: `then`/`else` (branch), `event`/`timeout` "
        "(wait_for_event), `suppressed` (an email to a suppressed address), `no_devices` (a "
        "push to a contact without active devices), `capped` (a send skipped by the "
        "contact's frequency cap); null otherwise (a send that went).",
    )
    resume_at = serializers.DateTimeField(
        allow_null=True,
        help_text="A send deferred by quiet hours: when it goes (status `deferred` until "
        "then), kept once it went. Null for a send that was not deferred.",
    )
    rendered = JsonObjectField(
        allow_null=True,
        help_text="Test runs: what a send step would have sent (`from`, `to`, `subject`, "
        "`html`, `text`, or `title`, `body`, `data`, `installations`) with the template "
        "version and `undefined_variables`, or the `fields` an update_contact would set. "
        "Null in live runs.",
    )


class RunWaitSerializer(serializers.Serializer[Any]):
    step_key = serializers.CharField()
    event = serializers.CharField(allow_null=True)
    correlation = CorrelationSerializer(allow_null=True)
    timeout_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=WaitStatus.choices)
    matched_event_id = serializers.UUIDField(allow_null=True)


class AutomationRunSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    automation_id = serializers.UUIDField()
    automation_version_id = serializers.UUIDField(source="version_id")
    contact_id = serializers.UUIDField(allow_null=True)
    trigger_event_id = serializers.UUIDField(allow_null=True)
    trigger_event_name = serializers.CharField()
    resolved_identity_type = serializers.ChoiceField(choices=IdentityType.choices, allow_null=True)
    resolved_identity_value = serializers.CharField(allow_null=True)
    correlation = CorrelationSerializer(allow_null=True)
    execution_mode = serializers.ChoiceField(choices=ExecutionMode.choices)
    status = serializers.ChoiceField(choices=RunStatus.choices)
    last_error = serializers.CharField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    virtual_now = serializers.DateTimeField(allow_null=True)
    terminal_reason = serializers.ChoiceField(choices=TerminalReason.choices, allow_null=True)
    completed_step_key = serializers.CharField(allow_null=True)
    cancellation_requested_at = serializers.DateTimeField(allow_null=True)
    cancellation_reason = serializers.CharField(allow_null=True)
    canceled_at = serializers.DateTimeField(allow_null=True)
    entered_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the trigger event was accepted: the goal's `within` counts from here.",
    )
    converted_at = serializers.DateTimeField(
        allow_null=True, help_text="When the goal event was accepted (null: not converted)."
    )
    conversion_event_id = serializers.UUIDField(allow_null=True)
    would_be_held_out = serializers.BooleanField(
        allow_null=True,
        help_text="Test runs: whether the contact would get a `holdout` run live (the steps "
        "are still walked, to show them). Null in live runs, and for a test by an address "
        "no contact has yet.",
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    steps = RunStepSerializer(many=True, source="steps.all")
    waits = RunWaitSerializer(many=True, source="waits.all")


class RunCancelSerializer(StrictSerializer):
    reason = StrictCharField(required=False, allow_null=True, max_length=500)


EVENT_NAME_PATTERN = r"^[a-z0-9]+(_[a-z0-9]+)*(\.[a-z0-9]+(_[a-z0-9]+)*)*$"


class TestRunEventSerializer(StrictSerializer):
    """An event the test run pretends arrives `after` its start."""

    event = serializers.RegexField(EVENT_NAME_PATTERN, max_length=200)
    payload = JsonObjectField(required=False)
    after = StrictCharField(
        max_length=64,
        help_text="ISO 8601 duration after the run's start (`PT0S`, `PT30M`, `P2D`).",
    )


class TestRunCreateSerializer(StrictSerializer):
    """`email` or `contact_id` (exactly one) names the contact; `payload` is the trigger
    event's payload."""

    body_rules = exactly_one_of("email", "contact_id")

    email = EmailMemberField(required=False)
    contact_id = serializers.UUIDField(required=False)
    payload = JsonObjectField(required=False)
    # With many=True DRF builds a ListSerializer, which takes max_length; the stub types
    # the child's constructor.
    events = TestRunEventSerializer(  # type: ignore[call-arg]
        many=True, required=False, max_length=100
    )
    start_at = serializers.DateTimeField(
        required=False, help_text="The virtual clock's start (default: now)."
    )
    version = serializers.UUIDField(
        required=False,
        help_text="A version of the automation to run (default: the published one, else the "
        "draft).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("email" in attrs) == ("contact_id" in attrs):
            raise serializers.ValidationError("Give exactly one of `email` or `contact_id`.")
        return attrs
