"""Writes of push apps."""

import secrets
import uuid

from django.db import transaction

from config.api.errors import NotFound, or_404
from config.db.update import model_update
from pushproviders.models import PushApp
from pushproviders.selectors import push_app_get
from tenancy.models import Project

PUBLIC_ID_PREFIX = "app_"


def push_app_create(*, project: Project, name: str) -> PushApp:
    """A new app with a public id clients can embed (`app_` and 16 hex digits)."""
    return PushApp.objects.create(
        project=project, name=name, public_id=f"{PUBLIC_ID_PREFIX}{secrets.token_hex(8)}"
    )


def push_app_update(*, project: Project, app_ref: uuid.UUID | str, name: str) -> PushApp:
    """Renames an app (its ids never change)."""
    with transaction.atomic():
        app = or_404(push_app_get(project=project, app_ref=app_ref), "No such push app.")
        app = PushApp.objects.select_for_update().get(pk=app.pk)
        model_update(app, fields={"name": name})
    return app


def push_app_delete(*, project: Project, app_ref: uuid.UUID | str) -> PushApp:
    """Removes an app with its providers (and their secrets) and installations; returns
    it as it was."""
    app = or_404(push_app_get(project=project, app_ref=app_ref), "No such push app.")
    if PushApp.objects.filter(pk=app.pk).delete()[0] == 0:
        raise NotFound("No such push app.")
    return app
