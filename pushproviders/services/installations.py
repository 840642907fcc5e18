"""Writes of device installations: registering a token (or Web Push subscription) for a
contact, idempotently, and removing it."""

import hashlib
import re
import uuid
from typing import Any

from django.db import IntegrityError, transaction

from config.api.errors import Conflict, Issue, NotFound, ValidationFailed, or_404
from config.runtime import clock
from contacts.models import Contact
from contacts.selectors import contact_get
from contacts.services import contact_upsert
from pushproviders import credentials
from pushproviders.credentials import CredentialInvalid
from pushproviders.models import Platform, PushInstallation
from pushproviders.selectors import push_app_get, push_installation_get
from tenancy.models import Project

MAX_TOKEN_CHARS = 4096
# FCM registration tokens: printable, no whitespace. APNs device tokens: hex.
_FCM_TOKEN = re.compile(r"^[\x21-\x7e]+$")
_APNS_TOKEN = re.compile(r"^[0-9a-fA-F]{64,200}$")


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _not_found(path: str, message: str) -> ValidationFailed:
    return ValidationFailed(message, issues=[Issue(code="not_found", path=path, message=message)])


def _device_fields(
    platform: str, token: str | None, subscription: dict[str, Any] | None
) -> dict[str, str]:
    """The token (and Web Push keys) of a registration, checked for its platform."""
    if platform == Platform.WEBPUSH:
        if token is not None or subscription is None:
            raise ValidationFailed.at(
                "subscription", "Web Push installations give `subscription`, not `token`."
            )
        try:
            endpoint = credentials.url_checked(subscription["endpoint"], "subscription.endpoint")
            p256dh, auth = credentials.subscription_keys_checked(
                subscription["keys"], path="subscription.keys"
            )
        except CredentialInvalid as error:
            raise ValidationFailed.at(error.path, error.message) from None
        if len(endpoint) > MAX_TOKEN_CHARS:
            raise ValidationFailed.at("subscription.endpoint", "Is too long.")
        return {"token": endpoint, "web_p256dh": p256dh, "web_auth": auth}
    if token is None or subscription is not None:
        raise ValidationFailed.at("token", f"{platform} installations give `token`.")
    pattern = _APNS_TOKEN if platform == Platform.APNS else _FCM_TOKEN
    if len(token) > MAX_TOKEN_CHARS or not pattern.fullmatch(token):
        expected = "a hex device token" if platform == Platform.APNS else "a registration token"
        raise ValidationFailed.at("token", f"Must be {expected}.")
    if platform == Platform.APNS:
        token = token.lower()
    return {"token": token, "web_p256dh": "", "web_auth": ""}


def _contact(project: Project, contact_id: uuid.UUID | None, email: str | None) -> Contact:
    if contact_id is not None:
        contact = contact_get(project=project, contact_id=contact_id)
        if contact is None:
            raise _not_found("contact_id", "No such contact.")
        return contact
    # Like events: an address the project has not seen yet becomes a contact.
    contact, _ = contact_upsert(project=project, email=email or "")
    return contact


def push_installation_register(
    *,
    project: Project,
    app_ref: uuid.UUID | str,
    platform: str,
    token: str | None = None,
    subscription: dict[str, Any] | None = None,
    contact_id: uuid.UUID | None = None,
    email: str | None = None,
) -> tuple[PushInstallation, bool]:
    """The installation of a device token for an app; returns (installation, created).

    The same token again for the app (any number of times, at once too) updates its one
    row: contact, keys, `active` and `last_seen_at`. An unknown email creates the contact.
    """
    app = push_app_get(project=project, app_ref=app_ref)
    if app is None:
        raise _not_found("app_id", "No such push app.")
    device = _device_fields(platform, token, subscription)
    digest = token_digest(device["token"])
    now = clock.now()
    with transaction.atomic():
        contact = _contact(project, contact_id, email)
        try:
            with transaction.atomic():
                installation = PushInstallation.objects.create(
                    project=project,
                    app=app,
                    contact=contact,
                    platform=platform,
                    token_digest=digest,
                    last_seen_at=now,
                    **device,
                )
            return installation, True
        except IntegrityError:
            # Registered before (or by a concurrent request that committed first).
            pass
        updated = PushInstallation.objects.filter(app=app, token_digest=digest).update(
            contact=contact,
            platform=platform,
            active=True,
            last_seen_at=now,
            updated_at=now,
            **device,
        )
        if updated == 0:
            raise Conflict("The installation was removed while it was registered; try again.")
        installation = PushInstallation.objects.select_related("app").get(
            app=app, token_digest=digest
        )
    return installation, False


def push_installation_delete(
    *, project: Project, installation_id: uuid.UUID | str
) -> PushInstallation:
    """Removes an installation; returns it as it was (`active` included)."""
    installation = or_404(
        push_installation_get(project=project, installation_id=installation_id),
        "No such installation.",
    )
    if PushInstallation.objects.filter(pk=installation.pk).delete()[0] == 0:
        raise NotFound("No such installation.")
    return installation


def installations_of_deleted_contact(*, contact: Contact) -> None:
    """Contacts hook: a deleted contact's devices are forgotten with it."""
    PushInstallation.objects.filter(contact=contact).delete()
