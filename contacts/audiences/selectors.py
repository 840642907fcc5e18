"""Reads of audiences, their properties and members."""

import uuid
from collections.abc import Collection
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.db.models.functions import Lower

from config.db.cursor import binary_cursor
from contacts.audiences.models import Audience, AudienceMembership, AudienceProperty
from contacts.models import Contact
from tenancy.models import Project


def _with_properties(audiences: QuerySet[Audience]) -> QuerySet[Audience]:
    return audiences.prefetch_related(
        Prefetch("properties", queryset=AudienceProperty.objects.order_by("created_at", "id"))
    )


def audience_list(*, project: Project) -> QuerySet[Audience]:
    """The project's audiences with their properties."""
    return _with_properties(Audience.objects.filter(project=project))


def audience_get(
    *, project: Project, audience_id: uuid.UUID | str, with_properties: bool = True
) -> Audience | None:
    audiences = Audience.objects.filter(project=project, id=audience_id)
    return (_with_properties(audiences) if with_properties else audiences).first()


def audience_property_list(*, audience: Audience) -> QuerySet[AudienceProperty]:
    return AudienceProperty.objects.filter(audience=audience)


def membership_list(*, audience: Audience) -> QuerySet[AudienceMembership]:
    """The audience's members, each with its contact."""
    return AudienceMembership.objects.filter(
        audience=audience, contact__deleted_at__isnull=True
    ).select_related("contact")


def memberships_of_contact(
    *, project: Project, contact_id: uuid.UUID | str
) -> QuerySet[AudienceMembership]:
    """The audiences a contact is in (for other families: automations, imports)."""
    return AudienceMembership.objects.filter(
        audience__project=project, contact_id=contact_id
    ).select_related("audience")


def audiences_by_names(*, project: Project, names: Collection[str]) -> dict[str, Audience]:
    """The project's audiences among `names` (any case), keyed by lower-cased name."""
    if not names:
        return {}
    keys = {name.lower() for name in names}
    found = Audience.objects.alias(key=Lower("name")).filter(project=project, key__in=keys)
    return {audience.name.lower(): audience for audience in found}


def memberships_existing(
    *, audience_ids: Collection[uuid.UUID], contact_ids: Collection[uuid.UUID]
) -> set[tuple[uuid.UUID, uuid.UUID]]:
    """The `(audience_id, contact_id)` pairs among these audiences and contacts that are
    memberships, in one query."""
    if not audience_ids or not contact_ids:
        return set()
    with binary_cursor() as cursor:
        cursor.execute(
            # S608: the model's table name.
            f"SELECT audience_id, contact_id FROM {AudienceMembership._meta.db_table} "  # noqa: S608
            "WHERE audience_id = ANY(%b) AND contact_id = ANY(%b)",
            [list(audience_ids), list(contact_ids)],
        )
        return set(cursor.fetchall())


def audience_member_contacts(
    *, audience: Audience, after: uuid.UUID | None = None, upto: uuid.UUID | None = None
) -> QuerySet[Contact]:
    """The audience's active contacts (the recipients of a campaign to it); with `after`
    and `upto`, only those whose id falls in (after, upto], read off the membership index
    (audience, contact) in id order."""
    members: dict[str, Any] = {"audience_memberships__audience": audience}
    # The range on both sides of the join: PostgreSQL carries the equality across it, not
    # the bounds, and would otherwise read every contact of the table for each range.
    if after is not None:
        members["audience_memberships__contact_id__gt"] = after
        members["id__gt"] = after
    if upto is not None:
        members["audience_memberships__contact_id__lte"] = upto
        members["id__lte"] = upto
    # One filter call: the range and the audience constrain the same membership row.
    return Contact.objects.filter(deleted_at__isnull=True, **members)
