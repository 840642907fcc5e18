"""The outbox of system events: how a family below the events app records a
`sendrealm.*` event without importing it.

The events app registers the writer in its `AppConfig.ready()`. The writer joins the
caller's transaction, so the event exists exactly when the change it reports does (a
rolled-back change leaves no event). Deciding whether anything changed, and so whether
there is an event at all, stays with the caller."""

import uuid
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db import models


class SystemEventWriter(Protocol):
    def __call__(
        self,
        *,
        project: Any,
        name: str,
        payload: dict[str, Any],
        contact_id: uuid.UUID | None,
        email: str | None,
        external_id: str | None,
    ) -> object: ...


_writer: SystemEventWriter | None = None


def register_system_event_writer(writer: SystemEventWriter) -> None:
    """Installs the one writer (the events app does, from its AppConfig.ready())."""
    global _writer
    if _writer is not None and _writer is not writer:
        raise ImproperlyConfigured("Another system event writer is already registered.")
    _writer = writer


def unregister_system_event_writer(writer: SystemEventWriter) -> None:
    global _writer
    if _writer is writer:
        _writer = None


def system_event_emit(
    *,
    project: models.Model,
    name: str,
    payload: dict[str, Any],
    contact_id: uuid.UUID | None = None,
    email: str | None = None,
    external_id: str | None = None,
) -> None:
    """Records the system event `sendrealm.<name>` in the caller's transaction, linked to
    the contact and carrying its email and external id as they are now.

    Without a registered writer this raises rather than drop the event: the caller's
    transaction then rolls back, so no change goes unreported."""
    if _writer is None:
        raise ImproperlyConfigured(
            f"No system event writer is registered (is the events app installed?); "
            f"`sendrealm.{name}` cannot be recorded."
        )
    _writer(
        project=project,
        name=name,
        payload=payload,
        contact_id=contact_id,
        email=email,
        external_id=external_id,
    )
