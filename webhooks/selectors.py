"""Reads of endpoints and deliveries, scoped to the acting project."""

import uuid
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from tenancy.models import Project
from webhooks.models import WebhookDelivery, WebhookEndpoint


def webhook_endpoint_list(*, project: Project) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(project=project, deleted_at__isnull=True)


def webhook_endpoint_get(
    *, project: Project, endpoint_id: uuid.UUID | str
) -> WebhookEndpoint | None:
    return webhook_endpoint_list(project=project).filter(pk=endpoint_id).first()


def webhook_delivery_list(
    *, project: Project, endpoint: WebhookEndpoint
) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(project=project, endpoint=endpoint)


def webhook_delivery_get(
    *, project: Project, delivery_id: uuid.UUID | str
) -> WebhookDelivery | None:
    return (
        WebhookDelivery.objects.select_related("endpoint")
        .filter(project=project, pk=delivery_id, endpoint__deleted_at__isnull=True)
        .first()
    )


def webhook_endpoints_enabled(*, project_ids: Iterable[Any]) -> dict[Any, list[WebhookEndpoint]]:
    """The enabled endpoints of the projects, by project: one query for a batch of events.
    Secrets are not loaded (the fan-out does not sign)."""
    found: dict[Any, list[WebhookEndpoint]] = defaultdict(list)
    ids = list(set(project_ids))
    if not ids:
        return found
    endpoints = WebhookEndpoint.objects.filter(
        project_id__in=ids, disabled_at__isnull=True, deleted_at__isnull=True
    ).only("id", "project_id", "event_types")
    for endpoint in endpoints:
        found[endpoint.project_id].append(endpoint)
    return found
