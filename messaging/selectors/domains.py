"""Reads of sending domains."""

import uuid

from django.db.models import Prefetch, QuerySet

from messaging.models import Domain, DomainRecord
from tenancy.models import Project


def domain_list(*, project: Project) -> QuerySet[Domain]:
    """The project's domains with their records (SPF, DKIM, DMARC in that order); the
    encrypted key stays in the database."""
    return (
        Domain.objects.filter(project=project)
        .defer("dkim_private_key_encrypted")
        .prefetch_related(Prefetch("records", queryset=DomainRecord.objects.order_by("id")))
    )


def domain_get(*, project: Project, domain_id: uuid.UUID | str) -> Domain | None:
    """A domain of the project by id; None when unknown, of another project or not a UUID."""
    try:
        pk = domain_id if isinstance(domain_id, uuid.UUID) else uuid.UUID(str(domain_id))
    except ValueError:
        return None
    return domain_list(project=project).filter(id=pk).first()
