"""Writes of audiences, their properties and memberships."""

import uuid
from collections.abc import Collection, Mapping
from typing import Any

from django.db import IntegrityError, transaction

from config.api.errors import Issue, NotFound, ValidationFailed
from config.api.jsonvalues import json_size_checked
from config.db.cursor import binary_cursor
from config.db.update import model_update
from config.registries.outbox import SystemEvent, system_events_emit
from config.runtime import clock
from contacts.audiences.errors import NameTaken, PropertyKeyTaken
from contacts.audiences.models import Audience, AudienceMembership, AudienceProperty
from contacts.audiences.selectors import audiences_by_names
from contacts.audiences.values import property_values_checked
from contacts.models import Contact
from contacts.normalization import merge_fields
from contacts.services import contact_event_emit, contact_find_for_update, contacts_lock_active
from tenancy.models import Project


def _locked_audience(project: Project, audience_id: uuid.UUID | str) -> Audience:
    audience = Audience.objects.select_for_update().filter(project=project, id=audience_id).first()
    if audience is None:
        raise NotFound("No such audience.")
    return audience


def audience_create(*, project: Project, name: str, description: str | None = None) -> Audience:
    """A new, empty audience; its name is unique in the project (any case)."""
    try:
        with transaction.atomic():
            return Audience.objects.create(project=project, name=name, description=description)
    except IntegrityError:
        raise NameTaken("audience") from None


def audience_update(
    *, project: Project, audience_id: uuid.UUID | str, changes: dict[str, Any]
) -> Audience:
    """Renames or re-describes an audience (`changes` holds `name` and/or `description`)."""
    try:
        with transaction.atomic():
            audience = _locked_audience(project, audience_id)
            model_update(audience, fields=changes)
            return audience
    except IntegrityError:
        raise NameTaken("audience") from None


def audience_delete(*, project: Project, audience_id: uuid.UUID | str) -> Audience:
    """Deletes an audience with its properties and memberships. Members do not "leave"
    (no `sendrealm.audience.left`): the audience itself is gone."""
    with transaction.atomic():
        audience = _locked_audience(project, audience_id)
        properties = list(audience.properties.order_by("created_at", "id"))
        # A queryset delete keeps the instance's id for the answer.
        Audience.objects.filter(pk=audience.pk).delete()
        # The caller renders what was deleted, properties included.
        # Django's prefetch cache, which Model does not declare: the deleted audience answers
        # with the properties it had, as a prefetched one would.
        audience._prefetched_objects_cache = {"properties": properties}  # type: ignore[attr-defined]
        return audience


def audience_property_create(
    *,
    project: Project,
    audience_id: uuid.UUID | str,
    key: str,
    type: str,
    description: str | None = None,
) -> AudienceProperty:
    """Adds a typed property to an audience; keys are unique per audience."""
    try:
        with transaction.atomic():
            audience = Audience.objects.filter(project=project, id=audience_id).first()
            if audience is None:
                raise NotFound("No such audience.")
            return AudienceProperty.objects.create(
                audience=audience, key=key, type=type, description=description
            )
    except IntegrityError:
        raise PropertyKeyTaken() from None


def audience_properties_ensure(*, audience: Audience, types: Mapping[str, str]) -> None:
    """Declares the properties of `types` (key -> PropertyType) the audience lacks, in one
    statement; a key already declared, or declared meanwhile by another writer, keeps its
    type (values of another type are then refused where they are set)."""
    if not types:
        return
    AudienceProperty.objects.bulk_create(
        [AudienceProperty(audience=audience, key=key, type=kind) for key, kind in types.items()],
        ignore_conflicts=True,
    )


def _locked_contact(
    project: Project, contact_id: uuid.UUID | str | None, email: str | None
) -> Contact:
    contact = contact_find_for_update(project=project, contact_id=contact_id, email=email)
    if contact is None:
        path = "contact_id" if contact_id is not None else "email"
        raise ValidationFailed(
            "The contact does not exist.",
            issues=[Issue(code="not_found", path=path, message="No such contact.")],
        )
    return contact


def _check_properties_size(project: Project, properties: dict[str, Any]) -> None:
    json_size_checked(
        properties,
        limit=project.contact_fields_limit_bytes,
        path="properties",
        policy="contact_fields_limit_bytes",
    )


def membership_add(
    *,
    project: Project,
    audience_id: uuid.UUID | str,
    contact_id: uuid.UUID | str | None = None,
    email: str | None = None,
    properties: dict[str, Any] | None = None,
) -> tuple[AudienceMembership, bool]:
    """Puts a contact into an audience, or merges property values into its membership.

    Returns (membership, created). Values must fit the audience's typed properties (None
    removes one). A new membership emits `sendrealm.audience.entered`.
    """
    with transaction.atomic():
        audience = Audience.objects.filter(project=project, id=audience_id).first()
        if audience is None:
            raise NotFound("No such audience.")
        known = {prop.key: prop for prop in audience.properties.all()}
        values = property_values_checked(
            properties=known, values=properties or {}, path="properties"
        )
        # The contact's row lock orders this against its deletion and other adds.
        contact = _locked_contact(project, contact_id, email)
        membership = (
            AudienceMembership.objects.filter(audience=audience, contact=contact)
            .select_related("contact")
            .first()
        )
        if membership is not None:
            merged = merge_fields(membership.properties, values)
            if merged != membership.properties:
                _check_properties_size(project, merged)
                membership.properties = merged
                membership.save(update_fields=["properties", "updated_at"])
            return membership, False
        created_properties = merge_fields({}, values)
        _check_properties_size(project, created_properties)
        membership = AudienceMembership.objects.create(
            audience=audience, contact=contact, properties=created_properties
        )
        contact_event_emit(
            project=project,
            name="audience.entered",
            contact=contact,
            payload={
                "audience_id": str(audience.id),
                "audience_name": audience.name,
                "contact_id": str(contact.id),
                "properties": membership.properties,
            },
        )
        return membership, True


def membership_remove(
    *, project: Project, audience_id: uuid.UUID | str, contact_id: uuid.UUID | str
) -> AudienceMembership:
    """Takes a contact out of an audience; emits `sendrealm.audience.left`."""
    with transaction.atomic():
        membership = (
            AudienceMembership.objects.select_for_update(of=("self",))
            .select_related("audience", "contact")
            .filter(
                audience__project=project,
                audience_id=audience_id,
                contact_id=contact_id,
                contact__deleted_at__isnull=True,
            )
            .first()
        )
        if membership is None:
            raise NotFound("The contact is not a member of this audience.")
        AudienceMembership.objects.filter(pk=membership.pk).delete()
        contact_event_emit(
            project=project,
            name="audience.left",
            contact=membership.contact,
            payload={
                "audience_id": str(membership.audience_id),
                "audience_name": membership.audience.name,
                "contact_id": str(membership.contact_id),
            },
        )
        return membership


def memberships_remove_for_contact(*, contact: Contact) -> int:
    """Removes a (deleted) contact from every audience, silently: automations do not
    react to a contact that no longer exists. Returns how many memberships went."""
    deleted, _ = AudienceMembership.objects.filter(contact=contact).delete()
    return deleted


def audiences_ensure(*, project: Project, names: Collection[str]) -> dict[str, Audience]:
    """The project's audiences for `names` (any case), creating the missing ones in one
    statement (a name another writer creates meanwhile is simply found); keyed by
    lower-cased name."""
    wanted: dict[str, str] = {}
    for name in names:
        wanted.setdefault(name.lower(), name)
    if not wanted:
        return {}
    found = audiences_by_names(project=project, names=list(wanted))
    missing = [name for key, name in wanted.items() if key not in found]
    if not missing:
        return found
    now = clock.now()
    # The unique index on the lower-cased name settles a race: the loser inserts nothing.
    Audience.objects.bulk_create(
        [Audience(project=project, name=name, created_at=now, updated_at=now) for name in missing],
        ignore_conflicts=True,
    )
    return audiences_by_names(project=project, names=list(wanted))


_ADD_MEMBERS_SQL = """
INSERT INTO {table} (id, audience_id, contact_id, properties, created_at, updated_at)
SELECT gen_random_uuid(), u.audience_id, u.contact_id, '{{}}'::jsonb, %(now)s, %(now)s
FROM unnest(%(audiences)b::uuid[], %(contacts)b::uuid[]) AS u(audience_id, contact_id)
ON CONFLICT (audience_id, contact_id) DO NOTHING
RETURNING audience_id, contact_id
"""


def memberships_add_many(
    *,
    project: Project,
    pairs: Collection[tuple[Audience, uuid.UUID]],
    emit: bool = True,
) -> set[tuple[uuid.UUID, uuid.UUID]]:
    """Puts contacts into audiences in one statement (PostgreSQL), without properties;
    pairs that are memberships already stay as they are. Returns the `(audience_id,
    contact_id)` pairs it created; with `emit`, each records `sendrealm.audience.entered`.

    The contacts are locked first and deleted ones left out, as `membership_add` does."""
    if not pairs:
        return set()
    identities = contacts_lock_active(
        project=project, contact_ids={contact_id for _, contact_id in pairs}
    )
    audiences = {audience.id: audience for audience, _ in pairs}
    live = sorted(
        (audience.id, contact_id) for audience, contact_id in pairs if contact_id in identities
    )
    if not live:
        return set()
    with binary_cursor() as cursor:
        cursor.execute(
            _ADD_MEMBERS_SQL.format(table=AudienceMembership._meta.db_table),
            {
                "now": clock.now(),
                "audiences": [audience_id for audience_id, _ in live],
                "contacts": [contact_id for _, contact_id in live],
            },
        )
        created = {(audience_id, contact_id) for audience_id, contact_id in cursor.fetchall()}
    if emit:
        for audience_id, audience in audiences.items():
            system_events_emit(
                project=project,
                name="audience.entered",
                events=[
                    SystemEvent(
                        payload={
                            "audience_id": str(audience_id),
                            "audience_name": audience.name,
                            "contact_id": str(contact_id),
                            "properties": {},
                        },
                        contact_id=contact_id,
                        email=identities[contact_id][0],
                        external_id=identities[contact_id][1],
                    )
                    for pair_audience, contact_id in live
                    if pair_audience == audience_id and (audience_id, contact_id) in created
                ],
            )
    return created
