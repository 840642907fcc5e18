"""Writes of the suppression list."""

from django.db import IntegrityError, transaction

from config.api.errors import Conflict, NotFound, ValidationFailed
from contacts.normalization import email_normalised, normalise_email
from messaging.models import Suppression, SuppressionReason
from tenancy.models import Project

ADD_ATTEMPTS = 5


def suppression_add(*, project: Project, email: str, reason: str) -> tuple[Suppression, bool]:
    """Suppresses an address (in the project's normal form); returns (entry, created).

    An address already on the list keeps its entry and first reason. Concurrent adds of one
    address meet at the unique index: one inserts, the others return its row. An invalid
    address or reason is a 400.
    """
    normalised = email_normalised(project=project, email=email)
    if reason not in SuppressionReason.values:
        raise ValidationFailed.at(
            "reason",
            f"Must be one of: {', '.join(SuppressionReason.values)}.",
            code="invalid_choice",
        )
    for _ in range(ADD_ATTEMPTS):
        try:
            with transaction.atomic():
                return (
                    Suppression.objects.create(project=project, email=normalised, reason=reason),
                    True,
                )
        except IntegrityError:
            existing = Suppression.objects.filter(project=project, email=normalised).first()
            if existing is not None:
                return existing, False
            # Removed between the failed insert and the read: insert again.
    raise Conflict("The suppression list changed too often for this address; try again.")


def suppression_remove(*, project: Project, email: str) -> Suppression:
    """Takes an address (any spelling of it) off the list; returns the removed entry.

    404 when it is not on the list, including for a string that is not an address.
    """
    try:
        normalised = normalise_email(email, policy=project.email_normalization)
    except ValueError:
        raise NotFound("This address is not suppressed.") from None
    entry = Suppression.objects.filter(project=project, email=normalised).first()
    # Deleting by primary key makes a concurrent removal of the same entry a 404 here.
    if entry is None or Suppression.objects.filter(pk=entry.pk).delete()[0] == 0:
        raise NotFound("This address is not suppressed.")
    return entry
