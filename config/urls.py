from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from config.api.exceptions import not_found_view
from config.api.health import HealthView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("health", HealthView.as_view(), name="health"),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi"), name="docs"),
    # Event ingest is the hottest path: first, so resolving it tries the fewest patterns.
    path("", include("events.api.urls")),
    path("", include("tenancy.api.urls")),
    path("", include("contacts.api.urls")),
    path("", include("contacts.audiences.api.urls")),
    path("", include("contacts.topics.api.urls")),
    path("", include("messaging.api.urls")),
    # Every other path: the 404 envelope, whatever the method.
    re_path(r"^.*$", not_found_view),
]

handler400 = "config.api.exceptions.bad_request_view"
handler403 = "config.api.exceptions.permission_denied_view"
handler404 = "config.api.exceptions.not_found_view"
handler500 = "config.api.exceptions.server_error_view"
