from django.urls import path

from messaging.api.views.templates import (
    TemplateDetailView,
    TemplateListView,
    TemplatePreviewView,
    TemplatePublishView,
    TemplateVersionDetailView,
    TemplateVersionListView,
    TemplateVersionRestoreView,
)

urlpatterns = [
    path("templates", TemplateListView.as_view(), name="template-list"),
    path("templates/<uuid:template_id>", TemplateDetailView.as_view(), name="template-detail"),
    path(
        "templates/<uuid:template_id>/versions",
        TemplateVersionListView.as_view(),
        name="template-version-list",
    ),
    path(
        "templates/<uuid:template_id>/versions/<uuid:version_id>",
        TemplateVersionDetailView.as_view(),
        name="template-version-detail",
    ),
    path(
        "templates/<uuid:template_id>/versions/<uuid:version_id>/restore",
        TemplateVersionRestoreView.as_view(),
        name="template-version-restore",
    ),
    path(
        "templates/<uuid:template_id>/actions/publish",
        TemplatePublishView.as_view(),
        name="template-publish",
    ),
    path(
        "templates/<uuid:template_id>/preview",
        TemplatePreviewView.as_view(),
        name="template-preview",
    ),
]
