"""Reads of the suppression list."""

from collections.abc import Iterable

from django.db.models import QuerySet

from contacts.normalization import normalise_email
from messaging.models import Suppression
from tenancy.models import Project


def suppression_list(*, project: Project) -> QuerySet[Suppression]:
    """The project's suppressed addresses."""
    return Suppression.objects.filter(project=project)


def suppression_get(*, project: Project, email: str) -> Suppression | None:
    """The entry for an address in any spelling; None when not suppressed or not an address."""
    try:
        normalised = normalise_email(email, policy=project.email_normalization)
    except ValueError:
        return None
    return suppression_list(project=project).filter(email=normalised).first()


def suppressed_among(*, project: Project, emails: Iterable[str]) -> set[str]:
    """The members of `emails`, exactly as given, whose normal form is suppressed.

    One query whatever the number of addresses; strings that are not addresses are never
    suppressed.
    """
    normal_forms: dict[str, list[str]] = {}
    for email in emails:
        try:
            normal = normalise_email(email, policy=project.email_normalization)
        except ValueError:
            continue
        normal_forms.setdefault(normal, []).append(email)
    if not normal_forms:
        return set()
    found = suppression_list(project=project).filter(email__in=list(normal_forms))
    return {
        given for normal in found.values_list("email", flat=True) for given in normal_forms[normal]
    }
