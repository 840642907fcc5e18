from django.urls import path

from messaging.webhooks.views import TRACKING_VIEWS, tracking_view

# One exact path per ESP; any other name falls through to the 404 envelope.
urlpatterns = [
    path(f"webhooks/email/{esp}", tracking_view(view_class), name=f"webhook-email-{esp}")
    for esp, view_class in TRACKING_VIEWS.items()
]
