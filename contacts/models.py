"""Contacts: the people a project messages."""

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from tenancy.models import Project, ProjectForeignKey, ProjectScopedModel


class Contact(ProjectScopedModel):
    """A person in a project, found by normalised email or external id."""

    # No index of its own: contact_project_created_idx leads with it and serves every
    # lookup by project (the project's deletion included).
    project = ProjectForeignKey(
        Project, on_delete=models.CASCADE, db_index=False, related_name="contacts"
    )
    email = models.CharField(max_length=320, null=True, blank=True)
    external_id = models.CharField(max_length=255, null=True, blank=True)
    fields = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # One active contact per normalised email: upserts race against this index.
            models.UniqueConstraint(
                fields=["project", "email"],
                condition=models.Q(deleted_at__isnull=True, email__isnull=False),
                name="contact_one_active_per_email",
            ),
            models.UniqueConstraint(
                fields=["project", "external_id"],
                condition=models.Q(deleted_at__isnull=True, external_id__isnull=False),
                name="contact_one_active_per_external_id",
            ),
        ]
        indexes = [
            # Serves the cursor listing of a project's contacts.
            models.Index(
                fields=["project", "created_at", "id"], name="contact_project_created_idx"
            ),
            # Serves campaigns to an opt-out topic (every contact of the project): their
            # fan-out batches read the project's contacts by ranges of id.
            models.Index(
                fields=["project", "id"],
                condition=models.Q(deleted_at__isnull=True),
                name="contact_project_id_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.email or self.external_id or str(self.id)
