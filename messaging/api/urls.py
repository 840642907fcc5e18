from django.urls import path, register_converter

from messaging.api.converters import EmailConverter
from messaging.api.views.suppressions import SuppressionDetailView, SuppressionListView

register_converter(EmailConverter, "email")

urlpatterns = [
    path("suppressions", SuppressionListView.as_view(), name="suppression-list"),
    path("suppressions/<email:email>", SuppressionDetailView.as_view(), name="suppression-detail"),
]
