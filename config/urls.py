import warnings

from django.contrib import admin
from django.urls import include, path, re_path, register_converter
from django.utils.deprecation import RemovedInDjango60Warning

from config.api.converters import AnyCaseUUIDConverter
from config.api.exceptions import not_found_view
from config.api.health import HealthView
from config.api.reference import OpenApiView, SwaggerView
from config.observability.metrics import metrics_view

# Every `<uuid:...>` of every app matches in any case. Django 5.2 warns that replacing a
# built-in converter goes away in Django 6, where this line must name a converter of its
# own instead.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RemovedInDjango60Warning)
    register_converter(AnyCaseUUIDConverter, "uuid")

urlpatterns = [
    path("admin/", admin.site.urls),
    path("health", HealthView.as_view(), name="health"),
    path("openapi.json", OpenApiView.as_view(), name="openapi"),
    path("docs", SwaggerView.as_view(url_name="openapi"), name="docs"),
    path("metrics", metrics_view, name="metrics"),
    # Event ingest is the hottest path: first, so resolving it tries the fewest patterns.
    path("", include("events.api.urls")),
    # The agent interface, MCP over Streamable HTTP: one path that every agent call takes
    # (near the end it tried over a hundred patterns first, 50 µs a call).
    path("", include("agent.urls")),
    path("", include("tenancy.api.urls")),
    path("", include("contacts.api.urls")),
    path("", include("contacts.audiences.api.urls")),
    path("", include("contacts.topics.api.urls")),
    path("", include("messaging.api.urls")),
    path("", include("pushproviders.api.urls")),
    # The pages behind links in sent mail (open pixel, click redirect, unsubscribe).
    path("", include("messaging.public.urls")),
    # ESP tracking webhooks (/webhooks/email/<esp>).
    path("", include("messaging.webhooks.urls")),
    path("", include("automations.api.urls")),
    path("", include("imports.api.urls")),
    # Segment-compatible ingest (/v1/track, /v1/batch, ...).
    path("", include("tracking.api.urls")),
    path("", include("webhooks.api.urls")),
    # Every other path (newlines included): the 404 envelope, whatever the method.
    re_path(r"^[\s\S]*$", not_found_view),
]

handler400 = "config.api.exceptions.bad_request_view"
handler403 = "config.api.exceptions.permission_denied_view"
handler404 = "config.api.exceptions.not_found_view"
handler500 = "config.api.exceptions.server_error_view"
