from collections.abc import Mapping

from django.urls import URLPattern, path, register_converter

from messaging.api.converters import EmailConverter
from messaging.api.views import campaigns
from messaging.api.views.campaigns import CampaignView
from messaging.api.views.domains import DomainDetailView, DomainListView, DomainVerifyView
from messaging.api.views.emails import EmailDetailView, EmailListView, TemplateTestView
from messaging.api.views.preferences import ContactPreferencesView
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


def _campaign_routes(
    prefix: str, name: str, views: Mapping[str, type[CampaignView]]
) -> list[URLPattern]:
    """One channel's campaign paths (`/campaigns` or `/push-campaigns`)."""
    one = f"{prefix}/<uuid:campaign_id>"
    send = {"action": "send"}
    return [
        path(prefix, views["list"].as_view(), name=f"{name}-list"),
        path(one, views["detail"].as_view(), name=f"{name}-detail"),
        path(f"{one}/actions/submit", views["submit"].as_view(), name=f"{name}-submit"),
        path(f"{one}/actions/withdraw", views["withdraw"].as_view(), name=f"{name}-withdraw"),
        path(f"{one}/actions/cancel", views["cancel"].as_view(), name=f"{name}-cancel"),
        path(f"{one}/actions/send", views["send"].as_view(), name=f"{name}-send"),
        path(
            f"{one}/actions/send/prepare",
            views["prepare"].as_view(),
            send,
            name=f"{name}-send-prepare",
        ),
        path(
            f"{one}/actions/send/execute",
            views["execute"].as_view(),
            send,
            name=f"{name}-send-execute",
        ),
    ]


CAMPAIGN_VIEWS: dict[str, type[CampaignView]] = {
    "list": campaigns.CampaignListView,
    "detail": campaigns.CampaignDetailView,
    "submit": campaigns.CampaignSubmitView,
    "withdraw": campaigns.CampaignWithdrawView,
    "cancel": campaigns.CampaignCancelView,
    "send": campaigns.CampaignSendView,
    "prepare": campaigns.CampaignSendPrepareView,
    "execute": campaigns.CampaignSendExecuteView,
}
PUSH_CAMPAIGN_VIEWS: dict[str, type[CampaignView]] = {
    "list": campaigns.PushCampaignListView,
    "detail": campaigns.PushCampaignDetailView,
    "submit": campaigns.PushCampaignSubmitView,
    "withdraw": campaigns.PushCampaignWithdrawView,
    "cancel": campaigns.PushCampaignCancelView,
    "send": campaigns.PushCampaignSendView,
    "prepare": campaigns.PushCampaignSendPrepareView,
    "execute": campaigns.PushCampaignSendExecuteView,
}

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
    path(
        "contacts/<uuid:contact_id>/preferences",
        ContactPreferencesView.as_view(),
        name="contact-preferences",
    ),
    path("domains", DomainListView.as_view(), name="domain-list"),
    path("domains/<uuid:domain_id>", DomainDetailView.as_view(), name="domain-detail"),
    path("domains/<uuid:domain_id>/verify", DomainVerifyView.as_view(), name="domain-verify"),
    *_campaign_routes("campaigns", "campaign", CAMPAIGN_VIEWS),
    *_campaign_routes("push-campaigns", "push-campaign", PUSH_CAMPAIGN_VIEWS),
]
