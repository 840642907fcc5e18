import uuid

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from config.api.pagination import paginate
from contacts.audiences.api.serializers import (
    AudienceCreateSerializer,
    AudiencePropertyCreateSerializer,
    AudiencePropertySerializer,
    AudienceSerializer,
    AudienceUpdateSerializer,
    MemberAddSerializer,
    MembershipResultSerializer,
    MembershipSerializer,
)
from contacts.audiences.models import Audience
from contacts.audiences.selectors import (
    audience_get,
    audience_list,
    audience_property_list,
    membership_list,
)
from contacts.audiences.services import (
    audience_create,
    audience_delete,
    audience_property_create,
    audience_update,
    membership_add,
    membership_remove,
)
from tenancy.api.base import ProjectView


class AudienceScopedView(ProjectView):
    def audience(self, audience_id: uuid.UUID, *, with_properties: bool = True) -> Audience:
        return or_404(
            audience_get(
                project=self.project, audience_id=audience_id, with_properties=with_properties
            ),
            "No such audience.",
        )


class AudienceListView(ProjectView):
    paginated = True

    @extend_schema(responses={200: AudienceSerializer(many=True)}, operation_id="audiences_list")
    def get(self, request: Request) -> Response:
        return paginate(request, audience_list(project=self.project), AudienceSerializer)

    @extend_schema(
        request=AudienceCreateSerializer,
        responses={201: AudienceSerializer},
        operation_id="audiences_create",
    )
    def post(self, request: Request) -> Response:
        body = self.validated(AudienceCreateSerializer)
        audience = audience_create(project=self.project, **body)
        return Response(AudienceSerializer(audience).data, status=201)


class AudienceDetailView(AudienceScopedView):
    @extend_schema(responses={200: AudienceSerializer}, operation_id="audiences_retrieve")
    def get(self, request: Request, audience_id: uuid.UUID) -> Response:
        return Response(AudienceSerializer(self.audience(audience_id)).data)

    @extend_schema(
        request=AudienceUpdateSerializer,
        responses={200: AudienceSerializer},
        operation_id="audiences_update",
    )
    def patch(self, request: Request, audience_id: uuid.UUID) -> Response:
        body = self.validated(AudienceUpdateSerializer)
        audience_update(project=self.project, audience_id=audience_id, changes=body)
        return Response(AudienceSerializer(self.audience(audience_id)).data)

    @extend_schema(responses={200: AudienceSerializer}, operation_id="audiences_destroy")
    def delete(self, request: Request, audience_id: uuid.UUID) -> Response:
        audience = audience_delete(project=self.project, audience_id=audience_id)
        return Response(AudienceSerializer(audience).data)


class AudiencePropertyListView(AudienceScopedView):
    paginated = True

    @extend_schema(
        responses={200: AudiencePropertySerializer(many=True)},
        operation_id="audience_properties_list",
    )
    def get(self, request: Request, audience_id: uuid.UUID) -> Response:
        audience = self.audience(audience_id, with_properties=False)
        return paginate(
            request, audience_property_list(audience=audience), AudiencePropertySerializer
        )

    @extend_schema(
        request=AudiencePropertyCreateSerializer,
        responses={201: AudiencePropertySerializer},
        operation_id="audience_properties_create",
    )
    def post(self, request: Request, audience_id: uuid.UUID) -> Response:
        body = self.validated(AudiencePropertyCreateSerializer)
        prop = audience_property_create(project=self.project, audience_id=audience_id, **body)
        return Response(AudiencePropertySerializer(prop).data, status=201)


class AudienceMemberListView(AudienceScopedView):
    paginated = True

    @extend_schema(
        responses={200: MembershipSerializer(many=True)}, operation_id="audience_members_list"
    )
    def get(self, request: Request, audience_id: uuid.UUID) -> Response:
        audience = self.audience(audience_id, with_properties=False)
        return paginate(request, membership_list(audience=audience), MembershipSerializer)

    @extend_schema(
        request=MemberAddSerializer,
        responses={201: MembershipResultSerializer, 200: MembershipResultSerializer},
        operation_id="audience_members_add",
    )
    def post(self, request: Request, audience_id: uuid.UUID) -> Response:
        body = self.validated(MemberAddSerializer)
        membership, created = membership_add(project=self.project, audience_id=audience_id, **body)
        data = {**MembershipSerializer(membership).data, "created": created}
        return Response(data, status=201 if created else 200)


class AudienceMemberDetailView(ProjectView):
    @extend_schema(responses={200: MembershipSerializer}, operation_id="audience_members_remove")
    def delete(self, request: Request, audience_id: uuid.UUID, contact_id: uuid.UUID) -> Response:
        membership = membership_remove(
            project=self.project, audience_id=audience_id, contact_id=contact_id
        )
        return Response(MembershipSerializer(membership).data)
