import uuid

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from config.api.pagination import paginate
from config.registries.systemevents import system_event_types
from tenancy.api.base import ProjectView
from webhooks.api.serializers import (
    SystemEventTypeSerializer,
    WebhookActionBodySerializer,
    WebhookDeliverySerializer,
    WebhookEndpointCreateSerializer,
    WebhookEndpointSerializer,
    WebhookEndpointUpdateSerializer,
    WebhookEndpointWithSecretSerializer,
    WebhookReplayCountSerializer,
    WebhookReplayRangeSerializer,
)
from webhooks.models import WebhookEndpoint
from webhooks.selectors import (
    webhook_delivery_list,
    webhook_endpoint_get,
    webhook_endpoint_list,
)
from webhooks.services.endpoints import (
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_endpoint_rotate_secret,
    webhook_endpoint_update,
)
from webhooks.services.replay import webhook_delivery_replay, webhook_endpoint_replay

# Endpoints are read with `resources.read` (read-only keys too) and changed, rotated and
# replayed with `resources.write` (full-access keys; personal keys with that scope), as
# automations' definitions are: ProjectView's defaults.


def _with_secret(endpoint: WebhookEndpoint, secret: str) -> dict[str, object]:
    return {**WebhookEndpointSerializer(endpoint).data, "secret": secret}


class EndpointScopedView(ProjectView):
    def endpoint(self, endpoint_id: uuid.UUID) -> WebhookEndpoint:
        return or_404(
            webhook_endpoint_get(project=self.project, endpoint_id=endpoint_id),
            "No such webhook endpoint.",
        )


class EndpointListView(ProjectView):
    """The project's webhook endpoints, oldest first; adding one."""

    paginated = True

    @extend_schema(
        responses={200: WebhookEndpointSerializer(many=True)}, operation_id="webhook_endpoints_list"
    )
    def get(self, request: Request) -> Response:
        return paginate(
            request, webhook_endpoint_list(project=self.project), WebhookEndpointSerializer
        )

    @extend_schema(
        request=WebhookEndpointCreateSerializer,
        responses={201: WebhookEndpointWithSecretSerializer},
        operation_id="webhook_endpoints_create",
    )
    def post(self, request: Request) -> Response:
        """Adds an endpoint; the answer shows its signing secret, the only time it is shown."""
        body = self.validated(WebhookEndpointCreateSerializer)
        endpoint, secret = webhook_endpoint_create(
            project=self.project,
            url=body["url"],
            event_types=body["event_types"],
            description=body.get("description"),
        )
        return Response(_with_secret(endpoint, secret), status=201)


class EndpointDetailView(EndpointScopedView):
    @extend_schema(
        responses={200: WebhookEndpointSerializer}, operation_id="webhook_endpoints_retrieve"
    )
    def get(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        return Response(WebhookEndpointSerializer(self.endpoint(endpoint_id)).data)

    @extend_schema(
        request=WebhookEndpointUpdateSerializer,
        responses={200: WebhookEndpointSerializer},
        operation_id="webhook_endpoints_update",
    )
    def patch(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        """Changes the URL, event types or description; `disabled: false` re-enables."""
        body = self.validated(WebhookEndpointUpdateSerializer)
        endpoint = webhook_endpoint_update(
            project=self.project, endpoint_id=endpoint_id, changes=body
        )
        return Response(WebhookEndpointSerializer(endpoint).data)

    @extend_schema(
        responses={200: WebhookEndpointSerializer}, operation_id="webhook_endpoints_destroy"
    )
    def delete(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        """Deletes the endpoint and its delivery log."""
        endpoint = webhook_endpoint_delete(project=self.project, endpoint_id=endpoint_id)
        return Response(WebhookEndpointSerializer(endpoint).data)


class EndpointRotateSecretView(ProjectView):
    @extend_schema(
        request=WebhookActionBodySerializer,
        responses={200: WebhookEndpointWithSecretSerializer},
        operation_id="webhook_endpoints_rotate_secret",
    )
    def post(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        """A new signing secret, shown only here; the old one also signs for 24 hours."""
        self.validated(WebhookActionBodySerializer)
        endpoint, secret = webhook_endpoint_rotate_secret(
            project=self.project, endpoint_id=endpoint_id
        )
        return Response(_with_secret(endpoint, secret))


class EndpointReplayView(ProjectView):
    @extend_schema(
        request=WebhookReplayRangeSerializer,
        responses={202: WebhookReplayCountSerializer},
        operation_id="webhook_endpoints_replay",
    )
    def post(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        """Sends the endpoint's failed deliveries made from `since` (until `until`) again."""
        body = self.validated(WebhookReplayRangeSerializer)
        count = webhook_endpoint_replay(
            project=self.project,
            endpoint_id=endpoint_id,
            since=body["since"],
            until=body.get("until"),
        )
        return Response({"count": count}, status=202)


class DeliveryListView(EndpointScopedView):
    """An endpoint's delivery log, oldest first."""

    paginated = True

    @extend_schema(
        responses={200: WebhookDeliverySerializer(many=True)},
        operation_id="webhook_deliveries_list",
    )
    def get(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        endpoint = self.endpoint(endpoint_id)
        deliveries = webhook_delivery_list(project=self.project, endpoint=endpoint)
        return paginate(request, deliveries, WebhookDeliverySerializer)


class DeliveryReplayView(ProjectView):
    @extend_schema(
        request=WebhookActionBodySerializer,
        responses={202: WebhookDeliverySerializer},
        operation_id="webhook_deliveries_replay",
    )
    def post(self, request: Request, delivery_id: uuid.UUID) -> Response:
        """Sends the delivery again, with the same `webhook-id` and body."""
        self.validated(WebhookActionBodySerializer)
        delivery = webhook_delivery_replay(project=self.project, delivery_id=delivery_id)
        return Response(WebhookDeliverySerializer(delivery).data, status=202)


class EventTypeListView(ProjectView):
    """Every system event type, with an example of its delivery's `data`."""

    @extend_schema(
        responses={200: SystemEventTypeSerializer(many=True)},
        operation_id="webhook_event_types_list",
    )
    def get(self, request: Request) -> Response:
        rows = [
            {
                "name": declared.full_name,
                "description": declared.description,
                "example": declared.example,
            }
            for declared in system_event_types()
        ]
        return Response(SystemEventTypeSerializer(rows, many=True).data)
