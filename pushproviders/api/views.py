import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from config.api.idempotency import idempotency_key
from config.api.pagination import paginate
from pushproviders.api.serializers import (
    PushAppCreateSerializer,
    PushAppSerializer,
    PushAppUpdateSerializer,
    PushInstallationCreateSerializer,
    PushInstallationSerializer,
    PushMessageSerializer,
    PushOpenResultSerializer,
    PushOpenSerializer,
    PushProviderCreateSerializer,
    PushProviderSerializer,
    PushProviderUpdateSerializer,
    PushSendSerializer,
    PushTestSerializer,
)
from pushproviders.selectors import (
    push_app_get,
    push_app_get_for_providers,
    push_app_list,
    push_message_get,
    push_provider_list,
)
from pushproviders.services.installations import (
    push_installation_delete,
    push_installation_register,
)
from pushproviders.services.opens import push_open
from pushproviders.services.providers import (
    push_provider_create,
    push_provider_delete,
    push_provider_update,
)
from pushproviders.services.push_apps import push_app_create, push_app_delete, push_app_update
from pushproviders.services.sending import push_send
from pushproviders.services.testsends import push_test_send
from tenancy.api.base import ProjectView
from tenancy.models import Scope


class PushAppListView(ProjectView):
    """The project's push apps, oldest first; adding one."""

    paginated = True

    @extend_schema(responses={200: PushAppSerializer(many=True)}, operation_id="push_apps_list")
    def get(self, request: Request) -> Response:
        return paginate(request, push_app_list(project=self.project), PushAppSerializer)

    @extend_schema(
        request=PushAppCreateSerializer,
        responses={201: PushAppSerializer},
        operation_id="push_apps_create",
    )
    def post(self, request: Request) -> Response:
        body = self.validated(PushAppCreateSerializer)
        app = push_app_create(project=self.project, name=body["name"])
        return Response(PushAppSerializer(app).data, status=201)


class PushAppDetailView(ProjectView):
    """One app, by its uuid or public id."""

    @extend_schema(responses={200: PushAppSerializer}, operation_id="push_apps_retrieve")
    def get(self, request: Request, app_ref: str) -> Response:
        app = or_404(push_app_get(project=self.project, app_ref=app_ref), "No such push app.")
        return Response(PushAppSerializer(app).data)

    @extend_schema(
        request=PushAppUpdateSerializer,
        responses={200: PushAppSerializer},
        operation_id="push_apps_update",
    )
    def patch(self, request: Request, app_ref: str) -> Response:
        body = self.validated(PushAppUpdateSerializer)
        app = push_app_update(project=self.project, app_ref=app_ref, name=body["name"])
        return Response(PushAppSerializer(app).data)

    @extend_schema(responses={200: PushAppSerializer}, operation_id="push_apps_destroy")
    def delete(self, request: Request, app_ref: str) -> Response:
        app = push_app_delete(project=self.project, app_ref=app_ref)
        return Response(PushAppSerializer(app).data)


class PushProviderListView(ProjectView):
    """An app's providers (GET also takes one of its installations' ids); adding one."""

    @extend_schema(
        responses={200: PushProviderSerializer(many=True)}, operation_id="push_providers_list"
    )
    def get(self, request: Request, app_ref: str) -> Response:
        app = or_404(
            push_app_get_for_providers(project=self.project, ref=app_ref), "No such push app."
        )
        providers = push_provider_list(project=self.project, app=app).order_by("created_at", "id")
        return Response(PushProviderSerializer(providers, many=True).data)

    @extend_schema(
        request=PushProviderCreateSerializer,
        responses={201: PushProviderSerializer},
        operation_id="push_providers_create",
    )
    def post(self, request: Request, app_ref: str) -> Response:
        body = self.validated(PushProviderCreateSerializer)
        provider = push_provider_create(project=self.project, app_ref=app_ref, body=body)
        return Response(PushProviderSerializer(provider).data, status=201)


class PushProviderDetailView(ProjectView):
    @extend_schema(
        request=PushProviderUpdateSerializer,
        responses={200: PushProviderSerializer},
        operation_id="push_providers_update",
    )
    def patch(self, request: Request, provider_id: uuid.UUID) -> Response:
        body = self.validated(PushProviderUpdateSerializer)
        provider = push_provider_update(project=self.project, provider_id=provider_id, body=body)
        return Response(PushProviderSerializer(provider).data)

    @extend_schema(responses={200: PushProviderSerializer}, operation_id="push_providers_destroy")
    def delete(self, request: Request, provider_id: uuid.UUID) -> Response:
        provider = push_provider_delete(project=self.project, provider_id=provider_id)
        return Response(PushProviderSerializer(provider).data)


class PushInstallationListView(ProjectView):
    """Registering a device; the same token again updates its installation (200)."""

    @extend_schema(
        request=PushInstallationCreateSerializer,
        responses={201: PushInstallationSerializer, 200: PushInstallationSerializer},
        operation_id="push_installations_create",
    )
    def post(self, request: Request) -> Response:
        body = self.validated(PushInstallationCreateSerializer)
        data = body
        installation, created = push_installation_register(
            project=self.project,
            app_ref=data["app_id"],
            platform=data["platform"],
            token=data.get("token"),
            subscription=data.get("subscription"),
            contact_id=data.get("contact_id"),
            email=data.get("email"),
        )
        return Response(
            PushInstallationSerializer(installation).data, status=201 if created else 200
        )


class PushInstallationDetailView(ProjectView):
    @extend_schema(
        responses={200: PushInstallationSerializer}, operation_id="push_installations_destroy"
    )
    def delete(self, request: Request, installation_id: uuid.UUID) -> Response:
        installation = push_installation_delete(
            project=self.project, installation_id=installation_id
        )
        return Response(PushInstallationSerializer(installation).data)


# Sending ---------------------------------------------------------------------------------

IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="Sends once per key and project within 24 h; a repeat returns the first "
    "push message.",
)


class PushSendView(ProjectView):
    """Sends a notification to a contact's installations of an app, or to installations."""

    method_scopes = {"POST": Scope.MESSAGES_SEND}

    @extend_schema(
        request=PushSendSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            202: PushMessageSerializer,
            200: OpenApiResponse(PushMessageSerializer, description="A repeated Idempotency-Key."),
        },
        operation_id="push_send",
    )
    def post(self, request: Request) -> Response:
        key = idempotency_key(request)
        body = self.validated(PushSendSerializer)
        message, created = push_send(
            project=self.project,
            app_ref=body["app_id"],
            contact_id=body.get("contact_id"),
            installation_ids=body.get("installation_ids"),
            template_id=body.get("template_id"),
            title=body.get("title"),
            body=body.get("body"),
            data=body.get("data"),
            idempotency_key=key,
        )
        return Response(PushMessageSerializer(message).data, status=202 if created else 200)


class PushTestView(ProjectView):
    """Sends a test notification to one installation."""

    method_scopes = {"POST": Scope.MESSAGES_SEND}

    @extend_schema(
        request=PushTestSerializer,
        responses={202: PushMessageSerializer},
        operation_id="push_tests_create",
    )
    def post(self, request: Request) -> Response:
        body = self.validated(PushTestSerializer)
        message = push_test_send(
            project=self.project,
            installation_id=body["installation_id"],
            title=body.get("title"),
            body=body.get("body"),
        )
        return Response(PushMessageSerializer(message).data, status=202)


class PushMessageDetailView(ProjectView):
    @extend_schema(responses={200: PushMessageSerializer}, operation_id="push_messages_retrieve")
    def get(self, request: Request, push_id: uuid.UUID) -> Response:
        message = or_404(
            push_message_get(project=self.project, push_id=push_id), "No such push message."
        )
        return Response(PushMessageSerializer(message).data)


class PushOpenView(ProjectView):
    """A device reports that its notification was opened (`sendrealm.push.open` once)."""

    method_scopes = {"POST": Scope.EVENTS_WRITE}

    @extend_schema(
        request=PushOpenSerializer,
        responses={200: PushOpenResultSerializer},
        operation_id="push_messages_open",
    )
    def post(self, request: Request, push_id: uuid.UUID) -> Response:
        body = self.validated(PushOpenSerializer)
        delivery, first = push_open(
            project=self.project, push_id=push_id, installation_id=body["installation_id"]
        )
        result = {
            "push_id": delivery.message_id,
            "installation_id": delivery.installation_id,
            "opened_at": delivery.opened_at,
            "duplicate": not first,
        }
        return Response(PushOpenResultSerializer(result).data)
