"""Audiences: named groups of contacts, with typed properties on each membership."""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models.functions import Lower

from contacts.models import Contact
from tenancy.models import Project, ProjectForeignKey, ProjectScopedModel


class PropertyType(models.TextChoices):
    STRING = "string"
    NUMBER = "number"
    BOOLEAN = "boolean"
    DATE = "date"


class Audience(ProjectScopedModel):
    """A named group of contacts in a project (a list, a segment you maintain yourself)."""

    # No index of its own: audience_project_idx and the unique audience_one_per_name
    # lead with it.
    project = ProjectForeignKey(
        Project, on_delete=models.CASCADE, db_index=False, related_name="audiences"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(null=True, blank=True)

    class Meta:
        constraints = [
            # Imports and people refer to audiences by name: one per name, any case.
            models.UniqueConstraint("project", Lower("name"), name="audience_one_per_name"),
        ]
        indexes = [
            # Serves the cursor listing of a project's audiences.
            models.Index(fields=["project", "created_at", "id"], name="audience_project_idx"),
        ]

    def __str__(self) -> str:
        return self.name


class AudienceProperty(models.Model):
    """A typed attribute every membership of the audience may carry (`plan`, `joined_on`)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    audience = models.ForeignKey(Audience, on_delete=models.CASCADE, related_name="properties")
    key = models.CharField(max_length=64)
    type = models.CharField(max_length=16, choices=PropertyType.choices)
    description = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "audience properties"
        constraints = [
            models.UniqueConstraint(
                fields=["audience", "key"], name="audience_property_one_per_key"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.type})"


class AudienceMembership(models.Model):
    """A contact in an audience, with its property values."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: membership_audience_idx and the unique
    # audience_membership_one_per_contact lead with it.
    audience = models.ForeignKey(
        Audience, on_delete=models.CASCADE, db_index=False, related_name="memberships"
    )
    contact = models.ForeignKey(
        Contact, on_delete=models.CASCADE, related_name="audience_memberships"
    )
    properties = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["audience", "contact"], name="audience_membership_one_per_contact"
            ),
        ]
        indexes = [
            # Serves the cursor listing of an audience's members.
            models.Index(fields=["audience", "created_at", "id"], name="membership_audience_idx"),
        ]

    def __str__(self) -> str:
        # Reads both rows: a page listing memberships selects them with it.
        return f"{self.contact} in {self.audience}"
