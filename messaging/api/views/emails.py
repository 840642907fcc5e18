"""`POST /emails`, `GET /emails`, `GET /emails/{id}` and `POST /templates/{id}/test`."""

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from config.api.idempotency import idempotency_key
from config.api.pagination import paginate
from messaging.api.serializers.emails import (
    EmailCreateSerializer,
    EmailSerializer,
    TemplateTestResultSerializer,
    TemplateTestSerializer,
)
from messaging.selectors.emails import email_get, email_list
from messaging.services.emails import EmailRequest, email_send, template_test_send
from tenancy.api.base import ProjectView
from tenancy.models import Scope

IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="Sends once per key and project within 24 h; a repeat returns the first email.",
)


class EmailListView(ProjectView):
    """The project's emails, oldest first; sending one."""

    paginated = True
    method_scopes = {"POST": Scope.MESSAGES_SEND}

    @extend_schema(responses={200: EmailSerializer(many=True)}, operation_id="emails_list")
    def get(self, request: Request) -> Response:
        return paginate(request, email_list(project=self.project), EmailSerializer)

    @extend_schema(
        request=EmailCreateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            201: EmailSerializer,
            200: OpenApiResponse(EmailSerializer, description="A repeated Idempotency-Key."),
        },
        operation_id="emails_create",
    )
    def post(self, request: Request) -> Response:
        key = idempotency_key(request)
        body = self.validated(EmailCreateSerializer)
        values = body
        email, created = email_send(
            project=self.project,
            request=EmailRequest(
                to=values.get("to", []),
                from_email=values.get("from"),
                subject=values.get("subject"),
                html=values.get("html"),
                text=values.get("text"),
                template_id=values.get("template_id"),
                data=values.get("data"),
                contact_id=values.get("contact_id"),
                tags=values.get("tags", []),
                reply_to=values.get("reply_to"),
            ),
            idempotency_key=key,
        )
        return Response(EmailSerializer(email).data, status=201 if created else 200)


class EmailDetailView(ProjectView):
    @extend_schema(responses={200: EmailSerializer}, operation_id="emails_retrieve")
    def get(self, request: Request, email_id: uuid.UUID) -> Response:
        email = or_404(email_get(project=self.project, email_id=email_id), "No such email.")
        return Response(EmailSerializer(email).data)


class TemplateTestView(ProjectView):
    """Sends a template's draft (else its published version) once: an email template to an
    address, a push template to an installation."""

    method_scopes = {"POST": Scope.MESSAGES_SEND}

    @extend_schema(
        request=TemplateTestSerializer,
        responses={202: TemplateTestResultSerializer},
        operation_id="templates_test",
    )
    def post(self, request: Request, template_id: uuid.UUID) -> Response:
        body = self.validated(TemplateTestSerializer)
        values = body
        sent = template_test_send(
            project=self.project,
            template_id=template_id,
            to=values.get("to"),
            installation_id=values.get("installation_id"),
            data=values.get("data"),
            contact_id=values.get("contact_id"),
        )
        return Response(TemplateTestResultSerializer(sent).data, status=202)
