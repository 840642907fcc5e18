import uuid

from django.db.models import QuerySet

from messaging.models import Email
from tenancy.models import Project


def email_list(*, project: Project) -> QuerySet[Email]:
    """A project's emails, oldest first (the cursor order)."""
    return Email.objects.filter(project=project).order_by("created_at", "id")


def email_get(*, project: Project, email_id: uuid.UUID | str) -> Email | None:
    return email_list(project=project).filter(pk=email_id).first()
