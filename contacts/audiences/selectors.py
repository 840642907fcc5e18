"""Reads of audiences, their properties and members."""

import uuid
from typing import Any

from django.db.models import Prefetch, QuerySet

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


def audience_member_contacts(
    *, audience: Audience, after: uuid.UUID | None = None, upto: uuid.UUID | None = None
) -> QuerySet[Contact]:
    """The audience's active contacts (the recipients of a campaign to it); with `after`
    and `upto`, only those whose id falls in (after, upto], read off the membership index
    (audience, contact) in id order."""
    members: dict[str, Any] = {"audience_memberships__audience": audience}
    if after is not None:
        members["audience_memberships__contact_id__gt"] = after
    if upto is not None:
        members["audience_memberships__contact_id__lte"] = upto
    # One filter call: the range and the audience constrain the same membership row.
    return Contact.objects.filter(deleted_at__isnull=True, **members)
