from django.urls import path

from imports.api.views import (
    ImportCommitView,
    ImportDetailView,
    ImportListView,
    ImportPreviewView,
)

urlpatterns = [
    path("imports", ImportListView.as_view(), name="import-list"),
    path("imports/<uuid:import_id>", ImportDetailView.as_view(), name="import-detail"),
    path("imports/<uuid:import_id>/preview", ImportPreviewView.as_view(), name="import-preview"),
    path(
        "imports/<uuid:import_id>/actions/commit/execute",
        ImportCommitView.as_view(),
        name="import-commit",
    ),
]
