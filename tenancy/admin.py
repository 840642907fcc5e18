"""Staff console for teams, projects, members and keys."""

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from config.console.admin import BigTableAdmin, beat_admin_secure
from tenancy.models import ApiKey, Membership, Plan, Project, ProjectGrant, Team, UsageDay
from tenancy.services import (
    api_key_create,
    api_key_forget,
    api_key_revoke,
    plan_forget,
    project_forget,
    team_plan_forget,
)


class ProjectInline(admin.TabularInline):
    model = Project
    extra = 0
    fields = ["name", "id"]
    readonly_fields = ["id"]
    show_change_link = True


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    """Plans: monthly quotas per meter (empty: unlimited) and the keys' rate limit."""

    list_display = [
        "name",
        "events_ingested_per_month",
        "emails_sent_per_month",
        "push_sent_per_month",
        "api_rate_limit",
    ]
    search_fields = ["name"]

    def save_model(self, request: HttpRequest, obj: Plan, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        # Quotas and limits are cached per team; its teams see the change at once.
        plan_forget(plan=obj)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "id", "plan", "api_rate_limit", "messaging_rollout", "created_at"]
    list_filter = ["messaging_rollout", "plan"]
    list_select_related = ["plan"]
    search_fields = ["name", "id"]
    inlines = [ProjectInline, MembershipInline]

    def save_model(self, request: HttpRequest, obj: Team, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        team_plan_forget(team=obj)
        for project in obj.projects.all():
            project_forget(project=project)


@admin.register(UsageDay)
class UsageDayAdmin(BigTableAdmin):
    """Metered usage as folded into the day rows (the live part of today shows in
    GET /project/usage)."""

    list_display = [
        "date",
        "project",
        "events_ingested",
        "runs_started",
        "waits_created",
        "template_tests",
        "emails_sent",
        "push_sent",
    ]
    list_select_related = ["project"]
    search_fields = ["project__name", "=project__id"]
    date_hierarchy = "date"
    ordering = ["-date"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "id", "team", "email_normalization", "created_at"]
    list_select_related = ["team"]
    search_fields = ["name", "id", "team__name"]
    raw_id_fields = ["team"]

    def save_model(self, request: HttpRequest, obj: Project, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        project_forget(project=obj)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__username", "team__name"]
    list_select_related = ["user", "team"]
    raw_id_fields = ["user", "team"]


class ProjectGrantInline(admin.TabularInline):
    model = ProjectGrant
    extra = 0
    raw_id_fields = ["project"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "prefix",
        "kind",
        "permission",
        "team",
        "project",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["kind", "permission", ("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["team", "project"]
    search_fields = ["name", "prefix"]
    raw_id_fields = ["team", "project", "user"]
    filter_horizontal = ["projects"]
    readonly_fields = ["prefix", "secret_hash", "last_used_at", "revoked_at", "created_at"]
    inlines = [ProjectGrantInline]
    actions = ["revoke_keys"]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            api_key_forget(api_key=obj)
            return
        # A new key gets its secret from the service and shows it exactly once.
        key, secret = api_key_create(
            team=obj.team,
            kind=obj.kind,
            name=obj.name,
            project=obj.project,
            all_projects=obj.all_projects,
            user=obj.user,
            scopes=obj.scopes or [],
            permission=obj.permission,
        )
        obj.pk = key.pk
        obj.__dict__.update({f.attname: getattr(key, f.attname) for f in key._meta.concrete_fields})
        obj._state.adding = False
        messages.warning(request, f"Copy the secret now, it is not shown again: {secret}")

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        api_key_forget(api_key=form.instance)

    def delete_model(self, request: HttpRequest, obj: ApiKey) -> None:
        super().delete_model(request, obj)
        api_key_forget(api_key=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        keys = list(queryset)
        super().delete_queryset(request, queryset)
        # A deleted key must stop working now, not when its cached record runs out.
        for key in keys:
            api_key_forget(api_key=key)

    @admin.action(description="Revoke the selected keys", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked = 0
        for key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(api_key=key)
            revoked += 1
        self.message_user(request, f"Revoked {revoked} keys.", messages.SUCCESS)


# django-celery-beat registers its admin before this module is imported (it comes first in
# INSTALLED_APPS); its actions must need change permission like ours.
beat_admin_secure(admin.site)
