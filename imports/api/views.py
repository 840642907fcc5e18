"""`POST /imports`, `GET /imports`, `GET /imports/{id}`, `POST /imports/{id}/preview` and
`POST /imports/{id}/actions/commit/execute`."""

import uuid

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from config.api.pagination import paginate
from config.api.parsers import JsonParser
from imports import conf
from imports.api.operations import import_commit_operation
from imports.api.parsers import ImportFileParser
from imports.api.serializers import (
    ImportFileSerializer,
    ImportPreviewSerializer,
    ImportRowsSerializer,
    ImportSerializer,
)
from imports.selectors import import_get, import_list
from imports.services.preview import ImportPreview, import_preview
from imports.services.upload import import_create_from_csv, import_create_from_rows
from tenancy.api.base import ProjectView
from tenancy.models import Scope
from tenancy.preparedactions.api.serializers import EmptyBodySerializer, ExecuteInputSerializer
from tenancy.preparedactions.services import prepared_action_execute

MULTIPART = "multipart/form-data"


class ImportListView(ProjectView):
    """The project's imports, oldest first; a new import from a CSV file or JSON rows."""

    paginated = True
    method_scopes = {"POST": Scope.IMPORTS_MANAGE}
    # JSON rows, or a CSV file as multipart/form-data: the one endpoint that takes a form.
    parser_classes = [JsonParser, ImportFileParser]

    @property
    def max_body_bytes(self) -> int:
        """JSON rows are parsed in memory: their own, smaller bound."""
        return conf.max_json_bytes()

    @extend_schema(responses={200: ImportSerializer(many=True)}, operation_id="imports_list")
    def get(self, request: Request) -> Response:
        return paginate(request, import_list(project=self.project), ImportSerializer)

    @extend_schema(
        request={"application/json": ImportRowsSerializer, MULTIPART: ImportFileSerializer},
        responses={201: ImportSerializer},
        operation_id="imports_create",
    )
    def post(self, request: Request) -> Response:
        if (request.content_type or "").startswith(MULTIPART):
            body = self.validated(ImportFileSerializer)
            upload = body["file"]
            record = import_create_from_csv(
                project=self.project,
                file=upload.file,
                size=upload.size,
                filename=upload.name,
                mapping=body["mapping"],
                automation_effects=body["automation_effects"],
                encoding=body.get("encoding"),
                delimiter=body.get("delimiter"),
            )
        else:
            body = self.validated(ImportRowsSerializer)
            record = import_create_from_rows(
                project=self.project,
                rows=body["rows"],
                mapping=body["mapping"],
                automation_effects=body["automation_effects"],
            )
        return Response(ImportSerializer(record).data, status=201)


class ImportDetailView(ProjectView):
    @extend_schema(responses={200: ImportSerializer}, operation_id="imports_retrieve")
    def get(self, request: Request, import_id: uuid.UUID) -> Response:
        record = or_404(import_get(project=self.project, import_id=import_id), "No such import.")
        return Response(ImportSerializer(record).data)


def _preview_data(preview: ImportPreview) -> dict[str, object]:
    summary = preview.summary
    return {
        "import_id": preview.record.id,
        "prepared_action_id": preview.prepared.id,
        "operation": preview.prepared.operation,
        "expires_at": preview.prepared.expires_at,
        "counts": summary.counts,
        "sample": summary.sample,
        "effects": summary.effects,
        "changes": summary.changes,
    }


class ImportPreviewView(ProjectView):
    """Plans every row against the current contacts and prepares `imports.commit`: exact
    counts and change totals, at most five sample rows (invalid ones first). Personal keys
    only, with the `imports.manage` scope and a role that grants it."""

    personal_keys_only = True
    method_scopes = {"POST": Scope.IMPORTS_MANAGE}

    @extend_schema(
        request=EmptyBodySerializer,
        responses={
            200: ImportPreviewSerializer,
            409: OpenApiResponse(description="The import is committing or committed."),
        },
        operation_id="imports_preview",
    )
    def post(self, request: Request, import_id: uuid.UUID) -> Response:
        self.validated(EmptyBodySerializer)
        preview = import_preview(
            project=self.project,
            access=self.access,
            import_id=import_id,
            operation=import_commit_operation(),
        )
        return Response(ImportPreviewSerializer(_preview_data(preview)).data)


class ImportCommitView(ProjectView):
    """Executes the preview: 202 with the import, `committing` (then `committed`, or
    `failed` with `last_error`). Contacts changed since the preview: 409 and nothing is
    applied. The same `idempotency_key` again answers the first result."""

    personal_keys_only = True
    method_scopes = {"POST": Scope.IMPORTS_MANAGE}

    @extend_schema(
        request=ExecuteInputSerializer,
        responses={
            202: ImportSerializer,
            409: OpenApiResponse(description="Contacts changed since the preview (`conflict`)."),
            422: OpenApiResponse(
                description="`prepared_action_expired` or `prepared_action_invalid`."
            ),
        },
        operation_id="imports_commit",
    )
    def post(self, request: Request, import_id: uuid.UUID) -> Response:
        body = self.validated(ExecuteInputSerializer)
        prepared = prepared_action_execute(
            project=self.project,
            access=self.access,
            operation=import_commit_operation(),
            resource_id=str(import_id),
            prepared_action_id=str(body["prepared_action_id"]),
            idempotency_key=body["idempotency_key"],
        )
        return Response(prepared.result, status=prepared.result_status or 202)
