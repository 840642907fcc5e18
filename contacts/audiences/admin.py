"""Staff console for audiences, their properties and members."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.safestring import SafeString

from config.console.admin import ReadOnlyModelAdmin, pretty_json
from contacts.audiences.models import Audience, AudienceMembership, AudienceProperty


class AudiencePropertyInline(admin.TabularInline):
    """Shown, not edited: changing a type would strand the values members already hold."""

    model = AudienceProperty
    extra = 0
    can_delete = False
    readonly_fields = (
        "key",
        "type",
        "description",
        "created_at",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Audience)
class AudienceAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "created_at"]
    list_select_related = ["project"]
    search_fields = ["name", "=id"]
    raw_id_fields = ["project"]
    readonly_fields = ["id", "created_at", "updated_at"]
    inlines = [AudiencePropertyInline]


@admin.register(AudienceMembership)
class AudienceMembershipAdmin(ReadOnlyModelAdmin):
    """Read-only: memberships change through the API so that events are emitted."""

    list_display = ["contact", "audience", "created_at"]
    list_select_related = ["contact", "audience"]
    search_fields = ["=contact__email", "=contact__external_id", "audience__name"]
    raw_id_fields = ["contact", "audience"]
    readonly_fields = (
        "id",
        "audience",
        "contact",
        "properties_display",
        "created_at",
        "updated_at",
    )
    fields = readonly_fields

    @admin.display(description="properties")
    def properties_display(self, obj: AudienceMembership) -> SafeString:
        return pretty_json(obj.properties)
