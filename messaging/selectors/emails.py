import operator
import uuid
from collections.abc import Collection
from functools import reduce

from django.db.models import Q, QuerySet

from config.db.ids import uuid7_ranges, uuid7_span
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


def emails_by_ids(queryset: QuerySet[Email], ids: Collection[uuid.UUID]) -> dict[uuid.UUID, Email]:
    """The emails of `queryset` among `ids`, by id. As `email_by_id` for one: the read is
    bounded by the ranges of the ids' times (`uuid7_ranges`), so it looks only in the
    partitions those times fall in, not in every partition's primary key index; the ids
    it did not find there (a version 4 id, an id whose time is not its email's, an email
    gone) are looked for again in every partition, one statement for all of them."""
    wanted = set(ids)
    if not wanted:
        return {}
    found = {email.pk: email for email in emails_in_their_partitions(queryset, wanted)}
    if rest := wanted - found.keys():
        found.update((email.pk, email) for email in queryset.filter(pk__in=rest))
    return found


def emails_in_their_partitions(
    queryset: QuerySet[Email], ids: Collection[uuid.UUID]
) -> QuerySet[Email]:
    """The emails of `queryset` among `ids` that are in the partitions of the ids' times
    (`uuid7_ranges`): every email the service made, but not one whose id carries no time
    or another time (the caller looks for those by id alone when it misses any)."""
    ranges = uuid7_ranges(ids)
    if not ranges:
        return queryset.none()
    within = reduce(
        operator.or_, (Q(created_at__gte=start, created_at__lt=end) for start, end in ranges)
    )
    return queryset.filter(within, pk__in=ids)


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
