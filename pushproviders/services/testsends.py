"""Test sends of push: a test notification to one installation (`POST /push/tests`) and
a push template's test send (messaging's push test sender), stored and queued as any send
is (sending.py)."""

import uuid
from collections.abc import Mapping
from typing import Any

from messaging.models import TemplateVersion
from pushproviders.models import PushInstallation, PushMessage
from pushproviders.services.sending import (
    Content,
    _contact,
    _installations_named,
    _quota,
    _Renderer,
    _store,
    _targets,
)
from tenancy.models import Project

TEST_TITLE = "Test notification"
TEST_BODY = "Push notifications reach this device."


def _one_installation(project: Project, installation_id: uuid.UUID) -> PushInstallation:
    return _installations_named(project, None, [installation_id], path="installation_id")[0]


def push_test_send(
    *,
    project: Project,
    installation_id: uuid.UUID,
    title: str | None = None,
    body: str | None = None,
) -> PushMessage:
    """Sends a test notification to one installation (`POST /push/tests`)."""
    installation = _one_installation(project, installation_id)
    content = Content(title=title or TEST_TITLE, body=body or TEST_BODY, data={})
    targets = _targets([installation], content)
    with _quota(project, targets):
        return _store(project=project, app=installation.app, targets=targets, test=True)


def push_template_test_send(
    *,
    project: Project,
    version: TemplateVersion,
    installation_id: uuid.UUID,
    data: Mapping[str, Any] | None,
    contact_id: uuid.UUID | None,
) -> uuid.UUID:
    """Messaging's push test sender (messaging/hooks.py): `version` rendered for the
    contact `contact_id` (else the installation's own) and sent once to the installation."""
    installation = _one_installation(project, installation_id)
    contact = _contact(project, contact_id) if contact_id is not None else None
    renderer = _Renderer(
        project=project, version=version, data=data, event=None, extra=None, contact=contact
    )
    message = _store(
        project=project,
        app=installation.app,
        targets=_targets([installation], renderer),
        template=version.template,
        version=version,
        test=True,
    )
    return message.pk
