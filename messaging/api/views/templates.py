import uuid
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from config.api.pagination import paginate
from messaging.api.serializers.templates import (
    TemplateCreateSerializer,
    TemplatePreviewResultSerializer,
    TemplatePreviewSerializer,
    TemplateSerializer,
    TemplateUpdateSerializer,
    TemplateVersionSerializer,
)
from messaging.models.templates import MessageTemplate
from messaging.selectors.templates import (
    template_get,
    template_list,
    template_version_get,
    template_version_list,
)
from messaging.services.rendering import SampleEvent
from messaging.services.templates import (
    template_create,
    template_delete,
    template_preview,
    template_publish,
    template_update,
    template_version_restore,
)
from tenancy.api.base import ProjectView
from tenancy.models import Scope
from tenancy.preparedactions.api.serializers import EmptyBodySerializer


class TemplateScopedView(ProjectView):
    def template(self, template_id: uuid.UUID) -> MessageTemplate:
        return or_404(
            template_get(project=self.project, template_id=template_id), "No such template."
        )


class TemplateListView(ProjectView):
    """The project's message templates, oldest first."""

    paginated = True

    @extend_schema(responses={200: TemplateSerializer(many=True)}, operation_id="templates_list")
    def get(self, request: Request) -> Response:
        return paginate(request, template_list(project=self.project), TemplateSerializer)

    @extend_schema(
        request=TemplateCreateSerializer,
        responses={201: TemplateSerializer},
        operation_id="templates_create",
    )
    def post(self, request: Request) -> Response:
        body = self.validated(TemplateCreateSerializer)
        values: dict[str, Any] = body
        template = template_create(
            project=self.project,
            name=values.pop("name"),
            channel=values.pop("channel"),
            from_email=values.pop("from_email", None),
            content=values,
        )
        return Response(TemplateSerializer(template).data, status=201)


class TemplateDetailView(TemplateScopedView):
    """One template: read, rename or edit its draft, soft-delete."""

    @extend_schema(responses={200: TemplateSerializer}, operation_id="templates_retrieve")
    def get(self, request: Request, template_id: uuid.UUID) -> Response:
        return Response(TemplateSerializer(self.template(template_id)).data)

    @extend_schema(
        request=TemplateUpdateSerializer,
        responses={200: TemplateSerializer},
        operation_id="templates_update",
    )
    def patch(self, request: Request, template_id: uuid.UUID) -> Response:
        body = self.validated(TemplateUpdateSerializer)
        template = template_update(project=self.project, template_id=template_id, changes=body)
        return Response(TemplateSerializer(template).data)

    @extend_schema(responses={200: TemplateSerializer}, operation_id="templates_destroy")
    def delete(self, request: Request, template_id: uuid.UUID) -> Response:
        template = template_delete(project=self.project, template_id=template_id)
        return Response(TemplateSerializer(template).data)


class TemplateVersionListView(TemplateScopedView):
    """Every version of a template, version 1 first."""

    paginated = True

    @extend_schema(
        responses={200: TemplateVersionSerializer(many=True)},
        operation_id="template_versions_list",
    )
    def get(self, request: Request, template_id: uuid.UUID) -> Response:
        versions = template_version_list(template=self.template(template_id))
        return paginate(request, versions, TemplateVersionSerializer)


class TemplateVersionDetailView(TemplateScopedView):
    @extend_schema(
        responses={200: TemplateVersionSerializer}, operation_id="template_versions_retrieve"
    )
    def get(self, request: Request, template_id: uuid.UUID, version_id: uuid.UUID) -> Response:
        version = or_404(
            template_version_get(template=self.template(template_id), version_id=version_id),
            "No such version.",
        )
        return Response(TemplateVersionSerializer(version).data)


class TemplatePublishView(ProjectView):
    @extend_schema(
        request=EmptyBodySerializer,
        responses={200: TemplateSerializer},
        operation_id="templates_publish",
    )
    def post(self, request: Request, template_id: uuid.UUID) -> Response:
        self.validated(EmptyBodySerializer)
        template = template_publish(project=self.project, template_id=template_id)
        return Response(TemplateSerializer(template).data)


class TemplateVersionRestoreView(ProjectView):
    @extend_schema(
        request=EmptyBodySerializer,
        responses={201: TemplateVersionSerializer},
        operation_id="template_versions_restore",
    )
    def post(self, request: Request, template_id: uuid.UUID, version_id: uuid.UUID) -> Response:
        self.validated(EmptyBodySerializer)
        draft = template_version_restore(
            project=self.project, template_id=template_id, version_id=version_id
        )
        return Response(TemplateVersionSerializer(draft).data, status=201)


class TemplatePreviewView(ProjectView):
    """Renders a version with sample or real data; sends nothing, so reading is enough."""

    method_scopes = {"POST": Scope.RESOURCES_READ}

    @extend_schema(
        request=TemplatePreviewSerializer,
        responses={200: TemplatePreviewResultSerializer},
        operation_id="templates_preview",
    )
    def post(self, request: Request, template_id: uuid.UUID) -> Response:
        body = self.validated(TemplatePreviewSerializer)
        values = body
        event = values.get("event")
        rendered = template_preview(
            project=self.project,
            template_id=template_id,
            version_id=values.get("version_id"),
            contact_id=values.get("contact_id"),
            event=SampleEvent(event["event"], event.get("payload", {})) if event else None,
            data=values.get("data"),
        )
        return Response(
            {"rendered": rendered.content(), "undefined_variables": rendered.undefined_variables}
        )
