"""Writes of contacts."""

from typing import Any

from django.db import IntegrityError, transaction

from config.api.errors import Conflict, ValidationFailed
from contacts.models import Contact
from contacts.normalization import normalise_email
from events.services import emit_system_event
from tenancy.models import Project

UPSERT_ATTEMPTS = 5


def merge_fields(current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Key-by-key merge; a key set to None is removed."""
    merged = dict(current)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _constraint_of(error: IntegrityError) -> str:
    diag = getattr(getattr(error, "__cause__", None), "diag", None)
    return getattr(diag, "constraint_name", None) or str(error)


def contact_upsert(
    *,
    project: Project,
    email: str,
    fields: dict[str, Any] | None = None,
    external_id: str | None = None,
) -> tuple[Contact, bool]:
    """The one active contact for `email`, created or updated; returns (contact, created).

    Races on the same address meet at the partial unique index: the loser's insert fails
    and it retries as an update, so exactly one caller creates.
    """
    try:
        normalised = normalise_email(email, policy=project.email_normalization)
    except ValueError:
        raise ValidationFailed.at(
            "email", "Must be a valid email address.", code="invalid_email"
        ) from None
    for _ in range(UPSERT_ATTEMPTS):
        with transaction.atomic():
            contact = (
                Contact.objects.select_for_update()
                .filter(project=project, email=normalised, deleted_at__isnull=True)
                .first()
            )
            if contact is not None:
                changed = []
                if fields:
                    contact.fields = merge_fields(contact.fields, fields)
                    changed.append("fields")
                if external_id is not None and external_id != contact.external_id:
                    contact.external_id = external_id
                    changed.append("external_id")
                if changed:
                    try:
                        with transaction.atomic():
                            contact.save(update_fields=[*changed, "updated_at"])
                    except IntegrityError:
                        raise Conflict("Another contact already has this external_id.") from None
                return contact, False
            try:
                with transaction.atomic():
                    contact = Contact.objects.create(
                        project=project,
                        email=normalised,
                        external_id=external_id,
                        fields=merge_fields({}, fields or {}),
                    )
            except IntegrityError as error:
                if "external_id" in _constraint_of(error):
                    raise Conflict("Another contact already has this external_id.") from None
                continue  # Another request created it first: take the update path.
            emit_system_event(
                project=project,
                name="contact.created",
                contact=contact,
                payload={"contact_id": str(contact.id), "email": contact.email},
            )
            return contact, True
    raise Conflict("The contact changed too often to upsert; try again.")
