"""Endpoints: create, change, delete, rotate the secret; re-enabling and disabling."""

import datetime as dt
import uuid
from typing import Any

from django.db import transaction

from config.api.errors import Issue, NotFound, ValidationFailed
from config.db.update import model_update
from config.net import netguard
from config.registries.systemevents import SYSTEM_PREFIX, system_event_type
from config.runtime import clock, secrets
from events.validation import NAME_PATTERN
from tenancy.models import Project
from webhooks import conf
from webhooks.models import WebhookEndpoint
from webhooks.signing import secret_new

EVERY_EVENT = "*"
MAX_EVENT_TYPES = 100
MAX_EVENT_NAME_LENGTH = 200
REASON_MANUAL = "Disabled through the API."


def _url_checked(url: str) -> str:
    """The URL when its text passes the guard; DNS is asked when a delivery connects."""
    try:
        netguard.url_well_formed(url, allow_loopback_http=conf.allow_http())
    except netguard.UrlRefused as refused:
        raise ValidationFailed.at("url", str(refused), code="invalid_url") from None
    return url


def _event_types_checked(event_types: list[str]) -> list[str]:
    """Event names (system ones must be declared), or `["*"]` alone; duplicates dropped."""
    issues: list[Issue] = []
    if not event_types:
        issues.append(Issue(code="required", path="event_types", message="Name at least one."))
    if len(event_types) > MAX_EVENT_TYPES:
        issues.append(
            Issue(
                code="too_many",
                path="event_types",
                message=f"At most {MAX_EVENT_TYPES} event types.",
            )
        )
    if EVERY_EVENT in event_types and len(set(event_types)) > 1:
        issues.append(
            Issue(
                code="invalid",
                path="event_types",
                message='"*" means every event and stands alone.',
            )
        )
    for index, name in enumerate(event_types):
        path = f"event_types.{index}"
        if name == EVERY_EVENT:
            continue
        if len(name) > MAX_EVENT_NAME_LENGTH or not NAME_PATTERN.match(name):
            issues.append(Issue(code="invalid", path=path, message="Not a valid event name."))
        elif name.startswith(SYSTEM_PREFIX) and system_event_type(name) is None:
            issues.append(
                Issue(
                    code="unknown_system_event",
                    path=path,
                    message="No such system event (see GET /webhook-event-types).",
                )
            )
    if issues:
        raise ValidationFailed(issues=issues)
    return list(dict.fromkeys(event_types))


def webhook_endpoint_create(
    *, project: Project, url: str, event_types: list[str], description: str | None
) -> tuple[WebhookEndpoint, str]:
    """An enabled endpoint and its secret, which only this answer shows."""
    secret = secret_new()
    endpoint = WebhookEndpoint.objects.create(
        project=project,
        url=_url_checked(url),
        event_types=_event_types_checked(event_types),
        description=description,
        secret=secrets.encrypt(secret),
    )
    return endpoint, secret


def _locked(project: Project, endpoint_id: uuid.UUID | str) -> WebhookEndpoint:
    endpoint = (
        WebhookEndpoint.objects.select_for_update()
        .filter(project=project, pk=endpoint_id, deleted_at__isnull=True)
        .first()
    )
    if endpoint is None:
        raise NotFound("No such webhook endpoint.")
    return endpoint


def webhook_endpoint_update(
    *, project: Project, endpoint_id: uuid.UUID | str, changes: dict[str, Any]
) -> WebhookEndpoint:
    """Changes the URL, event types or description; `disabled: false` re-enables (and
    forgets the failures that disabled it), `disabled: true` disables."""
    fields: dict[str, Any] = {}
    if "url" in changes:
        fields["url"] = _url_checked(changes["url"])
    if "event_types" in changes:
        fields["event_types"] = _event_types_checked(changes["event_types"])
    if "description" in changes:
        fields["description"] = changes["description"]
    with transaction.atomic():
        endpoint = _locked(project, endpoint_id)
        disabled = changes.get("disabled")
        if disabled is False and endpoint.disabled_at is not None:
            fields.update(disabled_at=None, disabled_reason=None, failing_since=None)
        elif disabled is True and endpoint.disabled_at is None:
            fields.update(disabled_at=clock.now(), disabled_reason=REASON_MANUAL)
        model_update(endpoint, fields=fields)
    return endpoint


def webhook_endpoint_delete(*, project: Project, endpoint_id: uuid.UUID | str) -> WebhookEndpoint:
    """Deletes the endpoint: gone from the API at once, and its deliveries not sent yet
    are never sent; the row and its log are removed by retention."""
    with transaction.atomic():
        endpoint = _locked(project, endpoint_id)
        model_update(endpoint, fields={"deleted_at": clock.now()})
    return endpoint


def webhook_endpoint_rotate_secret(
    *, project: Project, endpoint_id: uuid.UUID | str
) -> tuple[WebhookEndpoint, str]:
    """A new secret (shown only in this answer); the current one goes on signing beside it
    for SECRET_OVERLAP_HOURS. Rotating again within that time drops the oldest."""
    secret = secret_new()
    with transaction.atomic():
        endpoint = _locked(project, endpoint_id)
        model_update(
            endpoint,
            fields={
                "secret": secrets.encrypt(secret),
                "previous_secret": endpoint.secret,
                "previous_secret_expires_at": clock.now()
                + dt.timedelta(hours=conf.SECRET_OVERLAP_HOURS),
            },
        )
    return endpoint, secret


def endpoint_signing_secrets(endpoint: WebhookEndpoint, *, at: dt.datetime) -> list[str]:
    """The secrets that sign a delivery at `at`: the current one, then the previous one
    while its overlap lasts."""
    found = [secrets.decrypt(endpoint.secret)]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret and expires is not None and at < expires:
        found.append(secrets.decrypt(endpoint.previous_secret))
    return found


def webhook_secrets_reencrypt(*, batch_size: int = 500) -> tuple[int, int]:
    """Every stored endpoint secret (and previous secret) encrypted again with the first
    SECRETS_ENCRYPTION_KEY (key rotation); returns (endpoints rewritten, secrets no
    configured key opens). An unreadable secret is left as it is: its deliveries fail."""
    return secrets.rows_reencrypt(
        WebhookEndpoint, ("secret", "previous_secret"), batch_size=batch_size
    )
