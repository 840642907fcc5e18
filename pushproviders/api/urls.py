from django.urls import path

from pushproviders.api.views import (
    PushAppDetailView,
    PushAppListView,
    PushInstallationDetailView,
    PushInstallationListView,
    PushMessageDetailView,
    PushOpenView,
    PushProviderDetailView,
    PushProviderListView,
    PushSendView,
    PushTestView,
)

urlpatterns = [
    path("push/apps", PushAppListView.as_view(), name="push-app-list"),
    # `app_ref`: the app's uuid or public id (and, listing providers, an installation id).
    path("push/apps/<str:app_ref>", PushAppDetailView.as_view(), name="push-app-detail"),
    path(
        "push/apps/<str:app_ref>/providers",
        PushProviderListView.as_view(),
        name="push-provider-list",
    ),
    path(
        "push/providers/<uuid:provider_id>",
        PushProviderDetailView.as_view(),
        name="push-provider-detail",
    ),
    path("push/installations", PushInstallationListView.as_view(), name="push-installation-list"),
    path(
        "push/installations/<uuid:installation_id>",
        PushInstallationDetailView.as_view(),
        name="push-installation-detail",
    ),
    path("push/send", PushSendView.as_view(), name="push-send"),
    path("push/tests", PushTestView.as_view(), name="push-test"),
    path("push/messages/<uuid:push_id>", PushMessageDetailView.as_view(), name="push-message"),
    path(
        "push/messages/<uuid:push_id>/open",
        PushOpenView.as_view(),
        name="push-message-open",
    ),
]
