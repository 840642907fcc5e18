from django.urls import path, register_converter

from messaging.api.converters import EmailConverter
from messaging.api.views.domains import DomainDetailView, DomainListView, DomainVerifyView
from messaging.api.views.suppressions import SuppressionDetailView, SuppressionListView

register_converter(EmailConverter, "email")

urlpatterns = [
    path("suppressions", SuppressionListView.as_view(), name="suppression-list"),
    path("suppressions/<email:email>", SuppressionDetailView.as_view(), name="suppression-detail"),
    path("domains", DomainListView.as_view(), name="domain-list"),
    path("domains/<uuid:domain_id>", DomainDetailView.as_view(), name="domain-detail"),
    path("domains/<uuid:domain_id>/verify", DomainVerifyView.as_view(), name="domain-verify"),
]
