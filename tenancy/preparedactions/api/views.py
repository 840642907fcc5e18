"""Generic prepare and execute endpoints; each resource family routes its actions here."""

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import Forbidden, NotFound
from tenancy.api.base import ProjectView
from tenancy.preparedactions.api.serializers import (
    EmptyBodySerializer,
    ExecuteInputSerializer,
    PreparedActionOutputSerializer,
)
from tenancy.preparedactions.registry import Operation, operation_get
from tenancy.preparedactions.services import prepared_action_execute, prepared_action_prepare


class ActionView(ProjectView):
    """Resolves `<family>.<action>` to a registered operation and checks who may run it."""

    family: str = ""

    def operation(self) -> Operation:
        operation = operation_get(f"{self.family}.{self.kwargs['action']}")
        if operation is None:
            raise NotFound("No such action.")
        if (
            operation.lifecycle
            and self.access.key.is_personal
            and not self.project.team.messaging_rollout
        ):
            raise Forbidden("Lifecycle actions with personal keys are not enabled for this team.")
        if not self.access.allows(operation.scope):
            raise Forbidden(f"This key lacks the `{operation.scope}` scope for this action.")
        return operation

    def required_scope(self, method: str) -> str | None:
        # The operation's own scope is checked once it is known.
        return None


class PrepareActionView(ActionView):
    @extend_schema(request=EmptyBodySerializer, responses={200: PreparedActionOutputSerializer})
    def post(self, request: Request, id: Any, action: str) -> Response:
        operation = self.operation()
        self.validated(EmptyBodySerializer)
        prepared = prepared_action_prepare(
            project=self.project, access=self.access, operation=operation, resource_id=str(id)
        )
        return Response(PreparedActionOutputSerializer(prepared).data)


class ExecuteActionView(ActionView):
    @extend_schema(
        request=ExecuteInputSerializer,
        responses={200: OpenApiResponse(description="The operation's own result.")},
    )
    def post(self, request: Request, id: Any, action: str) -> Response:
        operation = self.operation()
        body = self.validated(ExecuteInputSerializer)
        prepared = prepared_action_execute(
            project=self.project,
            access=self.access,
            operation=operation,
            resource_id=str(id),
            prepared_action_id=str(body["prepared_action_id"]),
            idempotency_key=body["idempotency_key"],
        )
        return Response(prepared.result, status=prepared.result_status or 200)
