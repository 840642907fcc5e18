"""Message templates: named, versioned Liquid content for one channel (email or push)."""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from config.db.versions import version_constraints
from tenancy.models import Project


class Channel(models.TextChoices):
    EMAIL = "email"
    PUSH = "push"


class VersionState(models.TextChoices):
    DRAFT = "draft"
    PUBLISHED = "published"
    SUPERSEDED = "superseded"


class MessageTemplate(models.Model):
    """A named message of a project. Its content lives in versions: at most one draft (what
    edits change) and at most one published version (what sends use)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="message_templates")
    name = models.CharField(max_length=200)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    # The sender of email templates (`Name <address>` or an address); null: the project's
    # `default_from`. Not versioned: a change applies to the next send.
    from_email = models.CharField(max_length=320, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # Serves the cursor listing of a project's active templates.
            models.Index(
                fields=["project", "created_at", "id"],
                condition=models.Q(deleted_at__isnull=True),
                name="msgtemplate_project_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class TemplateVersion(models.Model):
    """One revision of a template's content. Email versions use subject, html and text;
    push versions title, body and data. Published and superseded versions never change."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: tplversion_template_idx and the unique
    # template_version_number_unique lead with it.
    template = models.ForeignKey(
        MessageTemplate, on_delete=models.CASCADE, db_index=False, related_name="versions"
    )
    version_number = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=VersionState.choices)
    subject = models.TextField(null=True, blank=True)
    html = models.TextField(null=True, blank=True)
    text = models.TextField(null=True, blank=True)
    title = models.TextField(null=True, blank=True)
    body = models.TextField(null=True, blank=True)
    data = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    restored_from_version = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = version_constraints(
            parent="template",
            number_name="template_version_number_unique",
            prefix="template",
            draft=VersionState.DRAFT,
            published=VersionState.PUBLISHED,
        )
        indexes = [
            # Serves the cursor listing of a template's versions.
            models.Index(fields=["template", "created_at", "id"], name="tplversion_template_idx"),
        ]

    def __str__(self) -> str:
        return f"v{self.version_number} ({self.state})"
