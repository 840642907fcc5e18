"""Reads of events and the event catalog."""

from django.db.models import QuerySet

from events.models import EventType
from tenancy.models import Project


def event_type_list(
    *, project: Project, search: str | None = None, source: str | None = None
) -> QuerySet[EventType]:
    """The project's catalog, optionally by name substring (case-insensitive) and source."""
    entries = EventType.objects.filter(project=project)
    if search:
        entries = entries.filter(event__icontains=search)
    if source:
        entries = entries.filter(source=source)
    return entries
