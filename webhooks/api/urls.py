from django.urls import path

from webhooks.api.views import (
    DeliveryListView,
    DeliveryReplayView,
    EndpointDetailView,
    EndpointListView,
    EndpointReplayView,
    EndpointRotateSecretView,
    EventTypeListView,
)

urlpatterns = [
    path("webhook-endpoints", EndpointListView.as_view(), name="webhook-endpoint-list"),
    path(
        "webhook-endpoints/<uuid:endpoint_id>",
        EndpointDetailView.as_view(),
        name="webhook-endpoint-detail",
    ),
    path(
        "webhook-endpoints/<uuid:endpoint_id>/actions/rotate_secret",
        EndpointRotateSecretView.as_view(),
        name="webhook-endpoint-rotate-secret",
    ),
    path(
        "webhook-endpoints/<uuid:endpoint_id>/actions/replay",
        EndpointReplayView.as_view(),
        name="webhook-endpoint-replay",
    ),
    path(
        "webhook-endpoints/<uuid:endpoint_id>/deliveries",
        DeliveryListView.as_view(),
        name="webhook-delivery-list",
    ),
    path(
        "webhook-deliveries/<uuid:delivery_id>/actions/replay",
        DeliveryReplayView.as_view(),
        name="webhook-delivery-replay",
    ),
    path("webhook-event-types", EventTypeListView.as_view(), name="webhook-event-types"),
]
