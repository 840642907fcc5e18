"""Staff console for contacts: find by email, external id or id; read fields as JSON."""

import contextlib
import datetime as dt
import uuid
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.safestring import SafeString

from config.console.admin import ReadOnlyInline, ReadOnlyModelAdmin, pretty_json
from contacts.audiences.models import AudienceMembership
from contacts.models import Contact
from contacts.services import contact_delete
from contacts.timeline import contact_timeline
from contacts.topics.models import Subscription


class MembershipInline(ReadOnlyInline):
    model = AudienceMembership
    # Each row shows its audience and is titled with its contact: fetched with the
    # memberships, not one query per row.
    rows_select_related = ["audience", "contact"]
    readonly_fields = (
        "audience",
        "properties_display",
        "created_at",
    )
    fields = readonly_fields

    @admin.display(description="properties")
    def properties_display(self, obj: AudienceMembership) -> SafeString:
        return pretty_json(obj.properties)


class SubscriptionInline(ReadOnlyInline):
    model = Subscription
    rows_select_related = ["topic", "contact"]
    readonly_fields = (
        "topic",
        "status",
        "source",
        "changed_at",
    )
    fields = readonly_fields


@admin.register(Contact)
class ContactAdmin(ReadOnlyModelAdmin):
    """Read-only: contacts change through the API so that events are emitted. Staff who may
    delete contacts can soft-delete them here, through the same service as the API."""

    list_display = ["email", "external_id", "project", "created_at", "deleted_at"]
    list_filter = [("deleted_at", admin.EmptyFieldListFilter)]
    list_select_related = ["project"]
    search_fields = ["email", "external_id"]
    search_help_text = "Exact email (any case), external id or contact id."
    raw_id_fields = ["project"]
    readonly_fields = (
        "id",
        "project",
        "email",
        "external_id",
        "fields_display",
        "created_at",
        "updated_at",
        "deleted_at",
    )
    fields = readonly_fields
    inlines = [MembershipInline, SubscriptionInline]
    actions = ["soft_delete"]

    @admin.display(description="fields")
    def fields_display(self, obj: Contact) -> SafeString:
        return pretty_json(obj.fields)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The contact's page answers "what happened to this person": one timeline of
        what every family recorded, newest first, a page at a time."""
        context = dict(extra_context or {})
        contact = self.get_object(request, object_id)
        if contact is not None:
            before = None
            with contextlib.suppress(ValueError):
                before = dt.datetime.fromisoformat(request.GET.get("timeline_before", ""))
            context["timeline"] = contact_timeline(
                contact=contact,
                user=request.user,
                before=before,
                before_key=request.GET.get("timeline_key") if before else None,
            )
        return super().change_view(request, object_id, form_url, extra_context=context)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Contact], search_term: str
    ) -> tuple[QuerySet[Contact], bool]:
        # Emails are stored normalised, so an exact match on the lower-cased term finds them
        # through an index instead of a LIKE over the whole table.
        term = search_term.strip()
        if not term:
            return queryset, False
        matches = queryset.filter(email=term.lower()) | queryset.filter(external_id=term)
        with contextlib.suppress(ValueError):
            matches = matches | queryset.filter(id=uuid.UUID(term))
        return matches, False

    def has_soft_delete_permission(self, request: HttpRequest) -> bool:
        # The console never hard-deletes contacts, but soft-deleting one is a deletion.
        return request.user.has_perm("contacts.delete_contact")

    @admin.action(description="Soft-delete the selected contacts", permissions=["soft_delete"])
    def soft_delete(self, request: HttpRequest, queryset: QuerySet[Contact]) -> None:
        count = 0
        for contact in queryset.filter(deleted_at__isnull=True).select_related("project"):
            contact_delete(project=contact.project, contact_id=contact.id)
            count += 1
        self.message_user(request, f"Soft-deleted {count} contacts.")
