from django.urls import path, register_converter

from messaging.api.converters import EmailConverter
from messaging.api.views.domains import DomainDetailView, DomainListView, DomainVerifyView
from messaging.api.views.emails import EmailDetailView, EmailListView, TemplateTestView
from messaging.api.views.suppressions import SuppressionDetailView, SuppressionListView
from messaging.api.views.templates import (
    TemplateDetailView,
    TemplateListView,
    TemplatePreviewView,
    TemplatePublishView,
    TemplateVersionDetailView,
    TemplateVersionListView,
    TemplateVersionRestoreView,
)

register_converter(EmailConverter, "email")

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
    path("templates/<uuid:template_id>/test", TemplateTestView.as_view(), name="template-test"),
    path("emails", EmailListView.as_view(), name="email-list"),
    path("emails/<uuid:email_id>", EmailDetailView.as_view(), name="email-detail"),
    path("suppressions", SuppressionListView.as_view(), name="suppression-list"),
    path("suppressions/<email:email>", SuppressionDetailView.as_view(), name="suppression-detail"),
    path("domains", DomainListView.as_view(), name="domain-list"),
    path("domains/<uuid:domain_id>", DomainDetailView.as_view(), name="domain-detail"),
    path("domains/<uuid:domain_id>/verify", DomainVerifyView.as_view(), name="domain-verify"),
]
