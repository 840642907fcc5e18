"""A contact's preferences, as its preference page (`/p/{token}`) shows and changes them."""

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from contacts.selectors import contact_get
from contacts.topics.models import SubscriptionSource
from messaging.api.serializers.preferences import (
    PreferencesSerializer,
    PreferencesUpdateSerializer,
)
from messaging.selectors.preferences import preferences_get
from messaging.services.preferences import preferences_update
from tenancy.api.base import ProjectView


class ContactPreferencesView(ProjectView):
    """Every topic of the project with the contact's status, and "unsubscribe from all"."""

    @extend_schema(responses={200: PreferencesSerializer}, operation_id="contact_preferences_get")
    def get(self, request: Request, contact_id: uuid.UUID) -> Response:
        contact = or_404(
            contact_get(project=self.project, contact_id=contact_id), "No such contact."
        )
        preferences = preferences_get(project=self.project, contact=contact)
        return Response(PreferencesSerializer(preferences).data)

    @extend_schema(
        request=PreferencesUpdateSerializer,
        responses={200: PreferencesSerializer},
        operation_id="contact_preferences_update",
    )
    def patch(self, request: Request, contact_id: uuid.UUID) -> Response:
        body = self.validated(PreferencesUpdateSerializer)
        preferences = preferences_update(
            project=self.project,
            contact_id=contact_id,
            topics=body.get("topics", []),
            unsubscribed_all=body.get("unsubscribed_all"),
            source=SubscriptionSource.API,
        )
        return Response(PreferencesSerializer(preferences).data)
