import uuid

from django.db.models import QuerySet

from config.db.ids import uuid7_span
from messaging.models import Email
from tenancy.models import Project


def email_list(*, project: Project) -> QuerySet[Email]:
    """A project's emails, oldest first (the cursor order)."""
    return Email.objects.filter(project=project).order_by("created_at", "id")


def email_by_id(queryset: QuerySet[Email], pk: uuid.UUID) -> Email | None:
    """The email of `queryset` with id `pk`. The emails table is partitioned by
    `created_at`, and an email's id (version 7) carries the millisecond of its
    `created_at`: the read names that millisecond, so it looks in one partition. An id
    without a time (version 4, from before ids had one), or one whose time is not its
    email's, is looked for in every partition."""
    span = uuid7_span(pk)
    if span is not None:
        email = queryset.filter(pk=pk, created_at__gte=span[0], created_at__lt=span[1]).first()
        if email is not None:
            return email
    return queryset.filter(pk=pk).first()


def _uuid(value: uuid.UUID | str) -> uuid.UUID | None:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return None


def email_get(*, project: Project, email_id: uuid.UUID | str) -> Email | None:
    pk = _uuid(email_id)
    return None if pk is None else email_by_id(email_list(project=project), pk)


def email_get_for_link(*, email_id: uuid.UUID | str) -> Email | None:
    """An email of any project, for the public pages of its links (the signed token in
    the link is the authority, there is no acting project); None when gone or not a UUID."""
    pk = _uuid(email_id)
    if pk is None:
        return None
    return email_by_id(Email.objects.select_related("project", "topic"), pk)
