import uuid
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from config.api.lean import LeanRequest
from config.api.pagination import paginate
from contacts.api.serializers import (
    ContactLookupSerializer,
    ContactSerializer,
    ContactUpdateSerializer,
    ContactUpsertResultSerializer,
    ContactUpsertSerializer,
    contact_data,
    contact_upsert_input,
    contacts_data,
)
from contacts.models import Contact
from contacts.normalization import email_normalised
from contacts.selectors import (
    contact_get,
    contact_get_by_email,
    contact_get_by_external_id,
    contact_list,
)
from contacts.services import (
    MISSING,
    contact_delete,
    contact_update,
    contact_upsert_row,
)
from tenancy.api.base import ProjectView
from tenancy.models import Project, Scope


class ContactListView(ProjectView):
    """The project's active contacts, oldest first."""

    paginated = True

    @extend_schema(responses={200: ContactSerializer(many=True)}, operation_id="contacts_list")
    def get(self, request: Request) -> Response:
        return paginate(request, contact_list(project=self.project), contacts_data)


class ContactUpsertView(ProjectView):
    """Creates the contact for an email or merges into the active one."""

    lean_methods = frozenset({"POST"})

    @extend_schema(
        request=ContactUpsertSerializer,
        responses={201: ContactUpsertResultSerializer, 200: ContactUpsertResultSerializer},
        operation_id="contacts_upsert",
    )
    def post(self, request: Request) -> Response:
        status, data = self.lean_post(request, self.project)
        return Response(data, status=status)

    @staticmethod
    def lean_post(request: Request | LeanRequest, project: Project) -> tuple[int, dict[str, Any]]:
        """The answer to an upsert, on both paths (the lean path calls it directly)."""
        body = contact_upsert_input(request.data)
        contact, created = contact_upsert_row(
            project=project,
            email=body["email"],
            fields=body.get("fields"),
            external_id=body.get("external_id"),
        )
        return (201 if created else 200), {**contact_data(contact), "created": created}


class ContactLookupView(ProjectView):
    """Finds the active contact for an email (or external id) without putting it in a URL."""

    method_scopes = {"POST": Scope.RESOURCES_READ}

    @extend_schema(
        request=ContactLookupSerializer,
        responses={200: ContactSerializer(allow_null=True)},
        operation_id="contacts_lookup",
    )
    def post(self, request: Request) -> Response:
        body = self.validated(ContactLookupSerializer)
        contact: Contact | None
        if "email" in body:
            # Normalised first so that an invalid address is a 400 rather than a null.
            email = email_normalised(project=self.project, email=body["email"])
            contact = contact_get_by_email(project=self.project, email=email)
        else:
            contact = contact_get_by_external_id(
                project=self.project, external_id=body["external_id"]
            )
        return Response(contact_data(contact) if contact is not None else None)


class ContactDetailView(ProjectView):
    """One active contact: read, change, soft-delete."""

    lean_methods = frozenset({"GET"})

    @extend_schema(responses={200: ContactSerializer}, operation_id="contacts_retrieve")
    def get(self, request: Request, contact_id: uuid.UUID) -> Response:
        contact = or_404(
            contact_get(project=self.project, contact_id=contact_id), "No such contact."
        )
        return Response(contact_data(contact))

    @extend_schema(
        request=ContactUpdateSerializer,
        responses={200: ContactSerializer},
        operation_id="contacts_update",
    )
    def patch(self, request: Request, contact_id: uuid.UUID) -> Response:
        body = self.validated(ContactUpdateSerializer)
        contact = contact_update(
            project=self.project,
            contact_id=contact_id,
            email=body.get("email", MISSING),
            fields=body.get("fields"),
            external_id=body.get("external_id", MISSING),
        )
        return Response(contact_data(contact))

    @extend_schema(responses={200: ContactSerializer}, operation_id="contacts_destroy")
    def delete(self, request: Request, contact_id: uuid.UUID) -> Response:
        contact = contact_delete(project=self.project, contact_id=contact_id)
        return Response(contact_data(contact))
