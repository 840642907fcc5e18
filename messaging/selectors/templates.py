"""Reads of message templates and their versions. Soft-deleted templates are invisible."""

import uuid

from django.db.models import OuterRef, QuerySet, Subquery

from messaging.models.templates import MessageTemplate, TemplateVersion, VersionState
from tenancy.models import Project


def _version_id(state: str) -> Subquery:
    # Each of these is one probe of the partial unique index on (template) for the state.
    return Subquery(
        TemplateVersion.objects.filter(template=OuterRef("pk"), state=state).values("id")[:1]
    )


def with_version_ids(templates: QuerySet[MessageTemplate]) -> QuerySet[MessageTemplate]:
    """Adds `draft_version_id` and `published_version_id`, as every template answer shows."""
    return templates.annotate(
        draft_version_id=_version_id(VersionState.DRAFT),
        published_version_id=_version_id(VersionState.PUBLISHED),
    )


def template_list(*, project: Project) -> QuerySet[MessageTemplate]:
    """The project's active templates, with their draft and published version ids."""
    return with_version_ids(
        MessageTemplate.objects.filter(project=project, deleted_at__isnull=True)
    )


def template_get(*, project: Project, template_id: uuid.UUID | str) -> MessageTemplate | None:
    """An active template of the project; None when unknown, deleted or another project's."""
    return template_list(project=project).filter(id=template_id).first()


def template_version_list(*, template: MessageTemplate) -> QuerySet[TemplateVersion]:
    """The template's versions; each knows its template without another query."""
    return template.versions.all()


def template_version_get(
    *, template: MessageTemplate, version_id: uuid.UUID | str
) -> TemplateVersion | None:
    return template_version_list(template=template).filter(id=version_id).first()


def template_version_current(*, template: MessageTemplate) -> TemplateVersion | None:
    """What an editor sees: the draft, else the published version."""
    return (
        template_version_list(template=template)
        .filter(state__in=[VersionState.DRAFT, VersionState.PUBLISHED])
        # "draft" sorts before "published".
        .order_by("state")
        .first()
    )


def template_version_published(*, template: MessageTemplate) -> TemplateVersion | None:
    """What sends use: the published version, or None before the first publish."""
    return template_version_list(template=template).filter(state=VersionState.PUBLISHED).first()
