"""Staff console for topics and subscriptions."""

from django.contrib import admin

from config.console.admin import ReadOnlyModelAdmin
from contacts.topics.models import Subscription, Topic


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "default_status", "created_at"]
    list_filter = ["default_status"]
    list_select_related = ["project"]
    search_fields = ["name", "=id"]
    raw_id_fields = ["project"]
    readonly_fields = ["id", "created_at", "updated_at"]


@admin.register(Subscription)
class SubscriptionAdmin(ReadOnlyModelAdmin):
    """Read-only consent records: changes go through the API, which records the source."""

    list_display = ["contact", "topic", "status", "source", "changed_at"]
    list_filter = ["status", "source"]
    list_select_related = ["contact", "topic"]
    search_fields = ["=contact__email", "=contact__external_id", "topic__name"]
    raw_id_fields = ["contact", "topic"]
    readonly_fields = [
        "id",
        "topic",
        "contact",
        "status",
        "source",
        "changed_at",
        "created_at",
        "updated_at",
    ]
