"""`GET /automations/{id}/report`: the automation's goal report (CONTRACT section 20)."""

import uuid
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from automations.api.views import AutomationScopedView
from automations.services.report import ReportDays, automation_report_get
from config.api.errors import ValidationFailed
from config.api.params import date_param


class GroupSerializer(serializers.Serializer[Any]):
    entered = serializers.IntegerField()
    converted = serializers.IntegerField()
    conversion_rate = serializers.FloatField(allow_null=True)


class ReportStepSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    entered = serializers.IntegerField(help_text="Runs that entered the step (first visits).")
    completed = serializers.IntegerField()
    converted = serializers.IntegerField(
        help_text="Runs that entered the step and converted (before or after it)."
    )


class ReportBranchSerializer(serializers.Serializer[Any]):
    step_key = serializers.CharField()
    branch_key = serializers.CharField()
    entered = serializers.IntegerField()
    converted = serializers.IntegerField()
    conversion_rate = serializers.FloatField(allow_null=True)


class AutomationReportSerializer(serializers.Serializer[Any]):
    """Runs that entered in the period: those that took the automation (`entered`,
    `converted`, `conversion_rate`) and the holdout's; rates are null when none entered."""

    entered = serializers.IntegerField()
    converted = serializers.IntegerField()
    conversion_rate = serializers.FloatField(allow_null=True)
    holdout = GroupSerializer()
    lift = serializers.FloatField(
        allow_null=True,
        help_text="`conversion_rate / holdout.conversion_rate - 1`; null without holdout "
        "conversions.",
    )
    lift_ci95 = serializers.ListField(
        child=serializers.FloatField(),
        min_length=2,
        max_length=2,
        allow_null=True,
        help_text="95 % interval of the lift (Katz's log method on the ratio of the rates); "
        "null when either group has no conversion.",
    )
    steps = ReportStepSerializer(many=True)
    branches = ReportBranchSerializer(many=True)


class AutomationReportView(AutomationScopedView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "from",
                OpenApiTypes.DATE,
                description="First day (UTC, included) runs entered on; default: unbounded.",
            ),
            OpenApiParameter(
                "to",
                OpenApiTypes.DATE,
                description="Last day (UTC, included) runs entered on; default: unbounded.",
            ),
        ],
        responses={200: AutomationReportSerializer},
        operation_id="automation_report",
    )
    def get(self, request: Request, automation_id: uuid.UUID) -> Response:
        """Conversions of the runs that entered from `from` to `to`, against the holdout,
        per step and per split branch (live runs only)."""
        days = ReportDays(since=date_param(request, "from"), until=date_param(request, "to"))
        if days.since is not None and days.until is not None and days.since > days.until:
            raise ValidationFailed.at("to", "Must not be before `from`.", code="invalid_range")
        report = automation_report_get(automation=self.automation(automation_id), days=days)
        return Response(AutomationReportSerializer(report).data)
