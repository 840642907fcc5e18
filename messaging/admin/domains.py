"""Staff console for sending domains and the records they publish. The DKIM private key
is never shown."""

from django.contrib import admin

from config.console.admin import ReadOnlyInline, ReadOnlyModelAdmin
from messaging.models import Domain, DomainRecord


class DomainRecordInline(ReadOnlyInline):
    model = DomainRecord
    show_change_link = False
    readonly_fields = ("purpose", "type", "name", "value", "status")
    fields = readonly_fields


@admin.register(Domain)
class DomainAdmin(ReadOnlyModelAdmin):
    """Read-only: domains are added, verified and removed through the API."""

    list_display = ["name", "status", "project", "created_at", "verified_at"]
    list_filter = ["status"]
    list_select_related = ["project"]
    search_fields = ["name", "=id"]
    raw_id_fields = ["project"]
    readonly_fields = (
        "id",
        "project",
        "name",
        "status",
        "dkim_selector",
        "created_at",
        "checked_at",
        "verified_at",
    )
    fields = readonly_fields
    inlines = [DomainRecordInline]
