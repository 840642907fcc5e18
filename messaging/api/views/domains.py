import uuid

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from config.api.pagination import paginate
from messaging.api.serializers.domains import (
    DomainCreateSerializer,
    DomainSerializer,
    DomainVerifySerializer,
)
from messaging.selectors.domains import domain_get, domain_list
from messaging.services.domains import domain_create, domain_delete, domain_verify
from tenancy.api.base import ProjectView


class DomainListView(ProjectView):
    """The project's sending domains, oldest first; adding one."""

    paginated = True

    @extend_schema(responses={200: DomainSerializer(many=True)}, operation_id="domains_list")
    def get(self, request: Request) -> Response:
        return paginate(request, domain_list(project=self.project), DomainSerializer)

    @extend_schema(
        request=DomainCreateSerializer,
        responses={201: DomainSerializer},
        operation_id="domains_create",
    )
    def post(self, request: Request) -> Response:
        body = self.validated(DomainCreateSerializer)
        domain = domain_create(project=self.project, name=body["name"])
        return Response(DomainSerializer(domain).data, status=201)


class DomainDetailView(ProjectView):
    @extend_schema(responses={200: DomainSerializer}, operation_id="domains_retrieve")
    def get(self, request: Request, domain_id: uuid.UUID) -> Response:
        domain = or_404(domain_get(project=self.project, domain_id=domain_id), "No such domain.")
        return Response(DomainSerializer(domain).data)

    @extend_schema(responses={200: DomainSerializer}, operation_id="domains_destroy")
    def delete(self, request: Request, domain_id: uuid.UUID) -> Response:
        domain = domain_delete(project=self.project, domain_id=domain_id)
        return Response(DomainSerializer(domain).data)


class DomainVerifyView(ProjectView):
    """Checks the domain's records over DNS now."""

    @extend_schema(
        request=DomainVerifySerializer,
        responses={200: DomainSerializer},
        operation_id="domains_verify",
    )
    def post(self, request: Request, domain_id: uuid.UUID) -> Response:
        self.validated(DomainVerifySerializer)
        domain = domain_verify(project=self.project, domain_id=domain_id)
        return Response(DomainSerializer(domain).data)
