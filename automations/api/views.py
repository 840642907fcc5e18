import datetime as dt
import re
import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from automations.api.serializers import (
    AutomationCreateSerializer,
    AutomationDetailSerializer,
    AutomationRunSerializer,
    AutomationSerializer,
    AutomationUpdateSerializer,
    AutomationVersionSerializer,
    RunCancelSerializer,
    TestRunCreateSerializer,
)
from automations.definition.validation import definition_schema
from automations.models import Automation, ExecutionMode, RunStatus
from automations.selectors import (
    automation_detail_get,
    automation_get,
    automation_list,
    automation_run_get,
    automation_run_list,
    automation_version_get,
    automation_version_list,
)
from automations.services.automations import (
    automation_create,
    automation_delete,
    automation_update,
    automation_version_restore,
)
from automations.services.lifecycle import ACTIONS, AUTOMATION_ACTIONS
from automations.services.runs import automation_run_cancel
from automations.services.testruns import automation_test_run
from config.api.errors import Forbidden, ValidationFailed, or_404
from config.api.pagination import paginate
from tenancy.api.base import ProjectView
from tenancy.models import Project, Scope
from tenancy.preparedactions.api.serializers import (
    EmptyBodySerializer,
    ExecuteInputSerializer,
    PreparedActionOutputSerializer,
)
from tenancy.preparedactions.api.views import ActionView
from tenancy.preparedactions.services import prepared_action_execute, prepared_action_prepare

ACTION_PARAMETER = OpenApiParameter(
    "action",
    str,
    OpenApiParameter.PATH,
    enum=list(ACTIONS),
    description="`publish` (the draft), `pause`, `resume` or `archive`.",
)


def _detail(project: Project, automation_id: uuid.UUID | str) -> Response:
    automation = or_404(
        automation_detail_get(project=project, automation_id=automation_id),
        "No such automation.",
    )
    return Response(AutomationDetailSerializer(automation).data)


class AutomationScopedView(ProjectView):
    def automation(self, automation_id: uuid.UUID) -> Automation:
        return or_404(
            automation_get(project=self.project, automation_id=automation_id),
            "No such automation.",
        )


class AutomationListView(ProjectView):
    """The project's automations, oldest first."""

    paginated = True

    @extend_schema(
        responses={200: AutomationSerializer(many=True)}, operation_id="automations_list"
    )
    def get(self, request: Request) -> Response:
        return paginate(request, automation_list(project=self.project), AutomationSerializer)

    @extend_schema(
        request=AutomationCreateSerializer,
        responses={201: AutomationDetailSerializer},
        operation_id="automations_create",
    )
    def post(self, request: Request) -> Response:
        """Creates an automation in `draft`; its definition becomes draft version 1."""
        body = self.validated(AutomationCreateSerializer)
        automation = automation_create(
            project=self.project,
            name=body["name"],
            description=body.get("description"),
            definition=body["definition"],
            editor_layout=body.get("editor_layout"),
        )
        response = _detail(self.project, automation.id)
        response.status_code = 201
        return response


class AutomationDetailView(ProjectView):
    """One automation with its current versions, every version and its run counts."""

    @extend_schema(responses={200: AutomationDetailSerializer}, operation_id="automations_retrieve")
    def get(self, request: Request, automation_id: uuid.UUID) -> Response:
        return _detail(self.project, automation_id)

    @extend_schema(
        request=AutomationUpdateSerializer,
        responses={200: AutomationDetailSerializer},
        operation_id="automations_update",
    )
    def patch(self, request: Request, automation_id: uuid.UUID) -> Response:
        """Renames the automation or edits its draft (made from the published version
        when there is none); an archived automation is 409."""
        body = self.validated(AutomationUpdateSerializer)
        automation_update(project=self.project, automation_id=automation_id, changes=body)
        return _detail(self.project, automation_id)

    @extend_schema(responses={200: AutomationDetailSerializer}, operation_id="automations_destroy")
    def delete(self, request: Request, automation_id: uuid.UUID) -> Response:
        """Soft-deletes the automation (answered with `deleted_at` set); its runs in
        progress are canceled."""
        automation = automation_delete(project=self.project, automation_id=automation_id)
        deleted = automation_detail_get(
            project=self.project, automation_id=automation.id, deleted_too=True
        )
        return Response(AutomationDetailSerializer(deleted).data)


class AutomationVersionListView(AutomationScopedView):
    """Every version of an automation, version 1 first."""

    paginated = True

    @extend_schema(
        responses={200: AutomationVersionSerializer(many=True)},
        operation_id="automation_versions_list",
    )
    def get(self, request: Request, automation_id: uuid.UUID) -> Response:
        versions = automation_version_list(automation=self.automation(automation_id))
        return paginate(request, versions, AutomationVersionSerializer)


class AutomationVersionDetailView(AutomationScopedView):
    @extend_schema(
        responses={200: AutomationVersionSerializer}, operation_id="automation_versions_retrieve"
    )
    def get(self, request: Request, automation_id: uuid.UUID, version_id: uuid.UUID) -> Response:
        version = or_404(
            automation_version_get(
                automation=self.automation(automation_id), version_id=version_id
            ),
            "No such version.",
        )
        return Response(AutomationVersionSerializer(version).data)


class AutomationVersionRestoreView(ProjectView):
    @extend_schema(
        request=EmptyBodySerializer,
        responses={201: AutomationVersionSerializer},
        operation_id="automation_versions_restore",
    )
    def post(self, request: Request, automation_id: uuid.UUID, version_id: uuid.UUID) -> Response:
        """A new draft with the definition of `version_id`; it replaces any draft."""
        self.validated(EmptyBodySerializer)
        draft = automation_version_restore(
            project=self.project, automation_id=automation_id, version_id=version_id
        )
        return Response(AutomationVersionSerializer(draft).data, status=201)


class AutomationActionPrepareView(ActionView):
    family = "automations"

    @extend_schema(
        request=EmptyBodySerializer,
        responses={200: PreparedActionOutputSerializer},
        parameters=[ACTION_PARAMETER],
        operation_id="automations_action_prepare",
    )
    def post(self, request: Request, automation_id: uuid.UUID, action: str) -> Response:
        """Prepares a lifecycle action: `effects` says what executing it would change
        (status from and to, the version to publish and the one it supersedes, runs in
        progress). A transition the status does not allow is 409 already here."""
        operation = self.operation()
        self.validated(EmptyBodySerializer)
        prepared = prepared_action_prepare(
            project=self.project,
            access=self.access,
            operation=operation,
            resource_id=str(automation_id),
        )
        return Response(PreparedActionOutputSerializer(prepared).data)


class AutomationActionExecuteView(ActionView):
    family = "automations"

    @extend_schema(
        request=ExecuteInputSerializer,
        responses={200: AutomationSerializer},
        parameters=[ACTION_PARAMETER],
        operation_id="automations_action_execute",
    )
    def post(self, request: Request, automation_id: uuid.UUID, action: str) -> Response:
        """Executes a prepared lifecycle action once; the same `idempotency_key` again
        answers the first result. If the automation changed since it was prepared, 409."""
        operation = self.operation()
        body = self.validated(ExecuteInputSerializer)
        prepared = prepared_action_execute(
            project=self.project,
            access=self.access,
            operation=operation,
            resource_id=str(automation_id),
            prepared_action_id=str(body["prepared_action_id"]),
            idempotency_key=body["idempotency_key"],
        )
        return Response(prepared.result, status=prepared.result_status or 200)


class AutomationActionView(ProjectView):
    write_scope = Scope.AUTOMATIONS_MANAGE

    @extend_schema(
        request=EmptyBodySerializer,
        responses={200: AutomationSerializer},
        parameters=[ACTION_PARAMETER],
        operation_id="automations_action",
    )
    def post(self, request: Request, automation_id: uuid.UUID, action: str) -> Response:
        """Runs a lifecycle action at once. Integration keys only: personal keys prepare
        and execute it."""
        if self.access.key.is_personal:
            raise Forbidden(
                "Personal keys change an automation's lifecycle in two steps: POST "
                f"/automations/{automation_id}/actions/{action}/prepare, then "
                f".../{action}/execute with the prepared_action_id."
            )
        self.validated(EmptyBodySerializer)
        automation = AUTOMATION_ACTIONS[action](project=self.project, automation_id=automation_id)
        return Response(AutomationSerializer(automation).data)


# RFC 3339 date-times, as the document's `format: date-time` says (Python alone would
# also take dates, week dates and the basic format).
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)


def _instant(request: Request, name: str) -> dt.datetime | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        if not _DATE_TIME.fullmatch(raw):
            raise ValueError(raw)
        return dt.datetime.fromisoformat(raw.upper()).astimezone(dt.UTC)
    except (ValueError, OverflowError):
        raise ValidationFailed.at(
            name,
            "Must be an ISO 8601 date-time with an offset (`2026-01-01T00:00:00Z`).",
            code="invalid_datetime",
        ) from None


def _choice(request: Request, name: str, choices: list[str]) -> str | None:
    raw = request.query_params.get(name)
    if raw is not None and raw not in choices:
        raise ValidationFailed.at(
            name, f"Must be one of {', '.join(f'`{c}`' for c in choices)}.", code="invalid_choice"
        )
    return raw


def _uuid(request: Request, name: str) -> uuid.UUID | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise ValidationFailed.at(name, "Must be a UUID.", code="invalid_uuid") from None


class AutomationRunListView(AutomationScopedView):
    """The automation's runs, oldest first, each with its step timeline and waits."""

    paginated = True

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=list(RunStatus.values)),
            OpenApiParameter("execution_mode", str, enum=list(ExecutionMode.values)),
            OpenApiParameter("contact_id", OpenApiTypes.UUID),
            OpenApiParameter(
                "created_after",
                OpenApiTypes.DATETIME,
                description="Runs created strictly after this time (with an offset).",
            ),
            OpenApiParameter(
                "created_before",
                OpenApiTypes.DATETIME,
                description="Runs created strictly before this time (with an offset).",
            ),
        ],
        responses={200: AutomationRunSerializer(many=True)},
        operation_id="automation_runs_list",
    )
    def get(self, request: Request, automation_id: uuid.UUID) -> Response:
        runs = automation_run_list(
            automation=self.automation(automation_id),
            status=_choice(request, "status", list(RunStatus.values)),
            execution_mode=_choice(request, "execution_mode", list(ExecutionMode.values)),
            contact_id=_uuid(request, "contact_id"),
            created_after=_instant(request, "created_after"),
            created_before=_instant(request, "created_before"),
        )
        return paginate(request, runs, AutomationRunSerializer)


class AutomationRunDetailView(AutomationScopedView):
    @extend_schema(
        responses={200: AutomationRunSerializer}, operation_id="automation_runs_retrieve"
    )
    def get(self, request: Request, automation_id: uuid.UUID, run_id: uuid.UUID) -> Response:
        run = or_404(
            automation_run_get(automation=self.automation(automation_id), run_id=run_id),
            "No such run.",
        )
        return Response(AutomationRunSerializer(run).data)


class AutomationRunCancelView(ProjectView):
    write_scope = Scope.AUTOMATIONS_MANAGE

    @extend_schema(
        request=RunCancelSerializer,
        responses={202: AutomationRunSerializer},
        operation_id="automation_runs_cancel",
    )
    def post(self, request: Request, automation_id: uuid.UUID, run_id: uuid.UUID) -> Response:
        """Cancels a run: a pending or waiting one at once, a running one at its next step
        (`cancellation_requested_at` is set either way). A finished run is 409."""
        body = self.validated(RunCancelSerializer)
        run = automation_run_cancel(
            project=self.project,
            automation_id=automation_id,
            run_id=run_id,
            reason=body.get("reason"),
        )
        return Response(AutomationRunSerializer(run).data, status=202)


class AutomationTestRunView(ProjectView):
    @extend_schema(
        request=TestRunCreateSerializer,
        responses={201: AutomationRunSerializer},
        operation_id="automation_test_runs_create",
    )
    def post(self, request: Request, automation_id: uuid.UUID) -> Response:
        """Runs the automation for one contact to its end, in this request, on a virtual
        clock (`execution_mode: test`): waits move `virtual_now`, injected `events` complete
        `wait_for_event` steps when they come before the timeout, sends are rendered onto
        their steps and never delivered. A payload the trigger filter refuses is 422."""
        body = self.validated(TestRunCreateSerializer)
        run = automation_test_run(
            project=self.project,
            automation_id=automation_id,
            email=body.get("email"),
            contact_id=body.get("contact_id"),
            payload=body.get("payload"),
            events=body.get("events") or [],
            start_at=body.get("start_at"),
            version_id=body.get("version"),
        )
        return Response(AutomationRunSerializer(run).data, status=201)


class DefinitionSchemaView(ProjectView):
    """The JSON Schema (draft 2020-12) of automation definitions; the graph checks made
    beyond it are listed in its `description`."""

    project_scoped = False

    @extend_schema(
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="The JSON Schema.")},
        operation_id="automations_definition_schema",
    )
    def get(self, request: Request) -> Response:
        return Response(definition_schema())
