from django.urls import path

from contacts.api.views import (
    ContactDetailView,
    ContactListView,
    ContactLookupView,
    ContactUpsertView,
)

urlpatterns = [
    path("contacts", ContactListView.as_view(), name="contact-list"),
    path("contacts/upsert", ContactUpsertView.as_view(), name="contact-upsert"),
    path("contacts/lookup", ContactLookupView.as_view(), name="contact-lookup"),
    path("contacts/<uuid:contact_id>", ContactDetailView.as_view(), name="contact-detail"),
]
