"""Staff console for contacts: find by email, external id or id; read fields as JSON."""

import contextlib
import json
import uuid
from typing import Any, ClassVar

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.safestring import SafeString

from contacts.audiences.models import AudienceMembership
from contacts.models import Contact
from contacts.services import contact_delete
from contacts.topics.models import Subscription

COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows, so a page of a huge table never scans all of it."""

    @cached_property
    def count(self) -> int:
        return self.object_list.values("pk")[: COUNT_CAP + 1].count()  # type: ignore[attr-defined]


def pretty_json(value: Any) -> SafeString:
    return format_html(
        '<pre style="margin:0">{}</pre>',
        json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False),
    )


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True
    rows_select_related: ClassVar[list[str]] = []

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).select_related(*self.rows_select_related)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MembershipInline(ReadOnlyInline):
    model = AudienceMembership
    # Each row shows its audience: fetched with the memberships, not one query per row.
    rows_select_related = ["audience"]
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
    rows_select_related = ["topic"]
    readonly_fields = (
        "topic",
        "status",
        "source",
        "changed_at",
    )
    fields = readonly_fields


@admin.register(Contact)
class ContactAdmin(admin.ModelAdmin):
    """Read-only: contacts change through the API so that events are emitted."""

    list_display = ["email", "external_id", "project", "created_at", "deleted_at"]
    list_filter = [("deleted_at", admin.EmptyFieldListFilter)]
    list_select_related = ["project"]
    search_fields = ["email", "external_id"]
    search_help_text = "Exact email (any case), external id or contact id."
    show_full_result_count = False
    paginator = CappedCountPaginator
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

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Soft-delete the selected contacts", permissions=["view"])
    def soft_delete(self, request: HttpRequest, queryset: QuerySet[Contact]) -> None:
        count = 0
        for contact in queryset.filter(deleted_at__isnull=True).select_related("project"):
            contact_delete(project=contact.project, contact_id=contact.id)
            count += 1
        self.message_user(request, f"Soft-deleted {count} contacts.")
