"""Staff console for the suppression list: find an address, see why it is there."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from config.console.admin import ReadOnlyModelAdmin
from messaging.models import Suppression


@admin.register(Suppression)
class SuppressionAdmin(ReadOnlyModelAdmin):
    """Read-only: entries change through the API (and bounces, complaints, unsubscribes)."""

    list_display = ["email", "reason", "project", "created_at"]
    list_filter = ["reason"]
    list_select_related = ["project"]
    search_fields = ["email"]
    search_help_text = "Exact email (any case), or @domain for every address of a domain."
    raw_id_fields = ["project"]
    readonly_fields = ("id", "project", "email", "reason", "created_at")
    fields = readonly_fields

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Suppression], search_term: str
    ) -> tuple[QuerySet[Suppression], bool]:
        # Addresses are stored normalised: an exact match on the lower-cased term uses the
        # unique index instead of a LIKE over the whole list.
        term = search_term.strip().lower()
        if not term:
            return queryset, False
        if term.startswith("@"):
            return queryset.filter(email__endswith=term), False
        return queryset.filter(email=term), False
