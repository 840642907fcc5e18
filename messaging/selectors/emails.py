import uuid

from django.db.models import QuerySet

from messaging.models import Email
from tenancy.models import Project


def email_list(*, project: Project) -> QuerySet[Email]:
    """A project's emails, oldest first (the cursor order)."""
    return Email.objects.filter(project=project).order_by("created_at", "id")


def email_get(*, project: Project, email_id: uuid.UUID | str) -> Email | None:
    return email_list(project=project).filter(pk=email_id).first()


def email_get_for_link(*, email_id: uuid.UUID | str) -> Email | None:
    """An email of any project, for the public pages of its links (the signed token in
    the link is the authority, there is no acting project); None when gone or not a UUID."""
    try:
        pk = email_id if isinstance(email_id, uuid.UUID) else uuid.UUID(str(email_id))
    except ValueError:
        return None
    return Email.objects.select_related("project", "topic").filter(pk=pk).first()
