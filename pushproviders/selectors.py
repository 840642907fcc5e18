"""Reads of push apps, providers, installations and messages, scoped to the acting project."""

import uuid

from django.db.models import Prefetch, QuerySet, prefetch_related_objects

from pushproviders.models import PushApp, PushDelivery, PushInstallation, PushMessage, PushProvider
from tenancy.models import Project


def _uuid(value: uuid.UUID | str) -> uuid.UUID | None:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return None


def push_app_list(*, project: Project) -> QuerySet[PushApp]:
    return PushApp.objects.filter(project=project)


def push_app_get(*, project: Project, app_ref: uuid.UUID | str) -> PushApp | None:
    """An app of the project by its uuid or its public id; None otherwise."""
    pk = _uuid(app_ref)
    apps = push_app_list(project=project)
    if pk is not None:
        return apps.filter(id=pk).first()
    return apps.filter(public_id=str(app_ref)).first()


def push_app_get_for_providers(*, project: Project, ref: str) -> PushApp | None:
    """The app named by its public id, its uuid, or the id of one of its installations
    (what a device knows); None when none of them is the project's."""
    app = push_app_get(project=project, app_ref=ref)
    if app is not None:
        return app
    pk = _uuid(ref)
    if pk is None:
        return None
    installation = (
        PushInstallation.objects.filter(project=project, id=pk).select_related("app").first()
    )
    return installation.app if installation is not None else None


def push_provider_list(*, project: Project, app: PushApp | None = None) -> QuerySet[PushProvider]:
    providers = PushProvider.objects.filter(project=project).select_related("app")
    return providers.filter(app=app) if app is not None else providers


def push_provider_get(*, project: Project, provider_id: uuid.UUID | str) -> PushProvider | None:
    pk = _uuid(provider_id)
    if pk is None:
        return None
    return push_provider_list(project=project).filter(id=pk).first()


def push_provider_for(*, app: PushApp, platform: str) -> PushProvider | None:
    """The app's provider for a platform (one at most), whatever its status or readiness."""
    return PushProvider.objects.filter(app=app, platform=platform).first()


def push_installation_list(
    *, project: Project, app: PushApp | None = None, contact_id: uuid.UUID | None = None
) -> QuerySet[PushInstallation]:
    installations = PushInstallation.objects.filter(project=project).select_related("app")
    if app is not None:
        installations = installations.filter(app=app)
    if contact_id is not None:
        installations = installations.filter(contact_id=contact_id)
    return installations


def push_installation_get(
    *, project: Project, installation_id: uuid.UUID | str
) -> PushInstallation | None:
    pk = _uuid(installation_id)
    if pk is None:
        return None
    return push_installation_list(project=project).filter(id=pk).first()


def push_message_get(*, project: Project, push_id: uuid.UUID | str) -> PushMessage | None:
    """A push message of the project with its deliveries (in send order); None otherwise."""
    pk = _uuid(push_id)
    if pk is None:
        return None
    message = PushMessage.objects.filter(project=project, id=pk).first()
    if message is None:
        return None
    # By the message's time too: its deliveries' partition only.
    deliveries = PushDelivery.objects.filter(message_created_at=message.created_at)
    prefetch_related_objects(
        [message], Prefetch("deliveries", queryset=deliveries.order_by("position", "id"))
    )
    return message
