from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from config.api.pagination import paginate
from messaging.api.serializers.suppressions import (
    SuppressionCreateSerializer,
    SuppressionSerializer,
)
from messaging.selectors.suppressions import suppression_get, suppression_list
from messaging.services.suppressions import suppression_add, suppression_remove
from tenancy.api.base import ProjectView

EMAIL_PARAMETER = OpenApiParameter(
    "email",
    OpenApiTypes.EMAIL,
    OpenApiParameter.PATH,
    description="The address, URL-encoded (`ada%40example.com`); any spelling of it.",
)


class SuppressionListView(ProjectView):
    """The project's suppressed addresses, oldest first; adding one."""

    paginated = True

    @extend_schema(
        responses={200: SuppressionSerializer(many=True)}, operation_id="suppressions_list"
    )
    def get(self, request: Request) -> Response:
        return paginate(request, suppression_list(project=self.project), SuppressionSerializer)

    @extend_schema(
        request=SuppressionCreateSerializer,
        responses={201: SuppressionSerializer, 200: SuppressionSerializer},
        operation_id="suppressions_create",
    )
    def post(self, request: Request) -> Response:
        body = self.validated(SuppressionCreateSerializer)
        suppression, created = suppression_add(
            project=self.project,
            email=body["email"],
            reason=body["reason"],
        )
        return Response(SuppressionSerializer(suppression).data, status=201 if created else 200)


class SuppressionDetailView(ProjectView):
    """One suppressed address: read it, or take it off the list."""

    @extend_schema(
        parameters=[EMAIL_PARAMETER],
        responses={200: SuppressionSerializer},
        operation_id="suppressions_retrieve",
    )
    def get(self, request: Request, email: str) -> Response:
        suppression = or_404(
            suppression_get(project=self.project, email=email), "This address is not suppressed."
        )
        return Response(SuppressionSerializer(suppression).data)

    @extend_schema(
        parameters=[EMAIL_PARAMETER],
        responses={200: SuppressionSerializer},
        operation_id="suppressions_destroy",
    )
    def delete(self, request: Request, email: str) -> Response:
        suppression = suppression_remove(project=self.project, email=email)
        return Response(SuppressionSerializer(suppression).data)
