"""Writes of push providers: settings checked per platform, secrets encrypted at rest.

Everything a body gives is checked before anything is written, so a bad member changes
nothing. The service account's token URI is checked as text (scheme, a literal address);
its host's addresses are checked when the token is fetched, not here.
"""

import json
import uuid
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction

from config.api.errors import Issue, NotFound, ValidationFailed, or_404
from config.db.update import model_update
from config.runtime import secrets
from pushproviders import credentials
from pushproviders.credentials import CredentialInvalid
from pushproviders.errors import ProviderPlatformTaken
from pushproviders.models import ApnsEnvironment, Platform, PushProvider
from pushproviders.selectors import push_app_get, push_provider_get
from tenancy.models import Project

DEFAULT_NAMES = {
    Platform.FCM: "Firebase Cloud Messaging",
    Platform.APNS: "Apple Push Notification service",
    Platform.WEBPUSH: "Web Push",
}

# The members each platform takes beyond `name` and `status`.
PLATFORM_MEMBERS: dict[str, frozenset[str]] = {
    Platform.FCM: frozenset({"service_account", "android_package_name"}),
    Platform.APNS: frozenset(
        {"apns_key_id", "apns_team_id", "apns_private_key", "apns_bundle_id", "apns_environment"}
    ),
    Platform.WEBPUSH: frozenset(
        {
            "web_vapid_public_key",
            "web_vapid_private_key",
            "web_vapid_subject",
            "generate_vapid_keys",
        }
    ),
}


def _pattern_checked(pattern: Any, message: str) -> Callable[[Any, str], str]:
    def check(raw: Any, path: str) -> str:
        if not isinstance(raw, str) or not pattern.fullmatch(raw):
            raise CredentialInvalid(path, message)
        return raw

    return check


_PLAIN_CHECKS: dict[str, Callable[[Any, str], str]] = {
    "android_package_name": _pattern_checked(
        credentials.ANDROID_PACKAGE, "Must be an Android package name such as com.example.app."
    ),
    "apns_key_id": credentials.apns_id_checked,
    "apns_team_id": credentials.apns_id_checked,
    "apns_bundle_id": _pattern_checked(
        credentials.BUNDLE_ID, "Must be a bundle id such as com.example.app."
    ),
    "web_vapid_subject": lambda raw, path: credentials.vapid_subject_checked(raw, path=path),
}


def _settings_from(
    body: dict[str, Any], *, platform: str, provider: PushProvider | None
) -> dict[str, Any]:
    """The model fields a body sets (secrets encrypted); 400 with every problem found.
    A member set to null clears the setting."""
    issues: list[Issue] = []
    fields: dict[str, Any] = {}

    def fail(error: CredentialInvalid) -> None:
        issues.extend(
            Issue(code="invalid", path=problem.path, message=problem.message)
            for problem in error.every
        )

    for name in sorted(set(body) - {"name", "status", "platform"} - PLATFORM_MEMBERS[platform]):
        issues.append(
            Issue(
                code="not_for_platform",
                path=name,
                message=f"Is not a setting of {platform} providers.",
            )
        )
    if "name" in body:
        fields["name"] = body["name"]
    if "status" in body:
        fields["status"] = body["status"]
    for name, check in _PLAIN_CHECKS.items():
        if name in body and name in PLATFORM_MEMBERS[platform]:
            try:
                fields[name] = "" if body[name] is None else check(body[name], name)
            except CredentialInvalid as error:
                fail(error)
    if "apns_environment" in body and platform == Platform.APNS:
        fields["apns_environment"] = body["apns_environment"] or ApnsEnvironment.PRODUCTION
    if "service_account" in body and platform == Platform.FCM:
        if body["service_account"] is None:
            fields["service_account_encrypted"] = ""
            fields["fcm_project_id"] = ""
        else:
            try:
                account = credentials.service_account_parsed(body["service_account"])
                fields["service_account_encrypted"] = secrets.encrypt(json.dumps(account))
                fields["fcm_project_id"] = account["project_id"]
            except CredentialInvalid as error:
                fail(error)
    if "apns_private_key" in body and platform == Platform.APNS:
        raw = body["apns_private_key"]
        try:
            fields["apns_private_key_encrypted"] = (
                "" if raw is None else secrets.encrypt(credentials.apns_private_key_checked(raw))
            )
        except CredentialInvalid as error:
            fail(error)
    if platform == Platform.WEBPUSH:
        _vapid_fields(body, provider, fields, fail)
    if issues:
        raise ValidationFailed(issues=issues)
    return fields


def _vapid_fields(
    body: dict[str, Any],
    provider: PushProvider | None,
    fields: dict[str, Any],
    fail: Callable[[CredentialInvalid], None],
) -> None:
    """The VAPID key pair: generated, or given (the public key derived from the private
    one when only that is given); a public key must match the private key it goes with."""
    if body.get("generate_vapid_keys"):
        for name in ("web_vapid_public_key", "web_vapid_private_key"):
            if name in body:
                fail(CredentialInvalid(name, "Give keys or generate_vapid_keys, not both."))
        generated_private, generated_public = credentials.vapid_key_pair()
        fields["web_vapid_private_key_encrypted"] = secrets.encrypt(generated_private)
        fields["web_vapid_public_key"] = generated_public
        return
    private: str | None = None
    if "web_vapid_private_key" in body:
        raw = body["web_vapid_private_key"]
        if raw is None:
            fields["web_vapid_private_key_encrypted"] = ""
        else:
            try:
                private = credentials.vapid_private_key_checked(raw)
            except CredentialInvalid as error:
                fail(error)
                return
            fields["web_vapid_private_key_encrypted"] = secrets.encrypt(private)
    elif provider is not None and provider.web_vapid_private_key_encrypted:
        try:
            private = secrets.decrypt(provider.web_vapid_private_key_encrypted)
        except secrets.SecretUnreadable:
            private = None
    if "web_vapid_public_key" in body and body["web_vapid_public_key"] is not None:
        try:
            public = credentials.p256_public_key_checked(
                body["web_vapid_public_key"], "web_vapid_public_key"
            )
        except CredentialInvalid as error:
            fail(error)
            return
        if private is not None and credentials.vapid_public_key_of(private) != public:
            fail(CredentialInvalid("web_vapid_public_key", "Does not match the VAPID private key."))
            return
        fields["web_vapid_public_key"] = public
    elif "web_vapid_public_key" in body:
        fields["web_vapid_public_key"] = ""
    elif "web_vapid_private_key" in body and private is not None:
        fields["web_vapid_public_key"] = credentials.vapid_public_key_of(private)


def push_provider_create(
    *, project: Project, app_ref: uuid.UUID | str, body: dict[str, Any]
) -> PushProvider:
    """Adds the app's provider for `body["platform"]` (one per platform: else 409)."""
    app = or_404(push_app_get(project=project, app_ref=app_ref), "No such push app.")
    platform = Platform(body["platform"])
    fields = _settings_from(body, platform=platform, provider=None)
    fields.setdefault("name", DEFAULT_NAMES[platform])
    if platform == Platform.APNS:
        fields.setdefault("apns_environment", ApnsEnvironment.PRODUCTION)
    provider = PushProvider(project=project, app=app, platform=platform, **fields)
    try:
        with transaction.atomic():
            provider.save(force_insert=True)
    except IntegrityError:
        raise ProviderPlatformTaken() from None
    return provider


def push_provider_update(
    *, project: Project, provider_id: uuid.UUID | str, body: dict[str, Any]
) -> PushProvider:
    """Changes some settings; `{"status": "disabled"}` disables the provider."""
    provider = or_404(
        push_provider_get(project=project, provider_id=provider_id), "No such push provider."
    )
    if "platform" in body and body["platform"] != provider.platform:
        raise ValidationFailed.at(
            "platform", "A provider's platform cannot change; add a new provider instead."
        )
    fields = _settings_from(body, platform=provider.platform, provider=provider)
    with transaction.atomic():
        locked = PushProvider.objects.select_for_update().filter(pk=provider.pk).first()
        if locked is None:
            raise NotFound("No such push provider.")
        model_update(locked, fields=fields)
    return or_404(
        push_provider_get(project=project, provider_id=provider.pk), "No such push provider."
    )


def push_provider_delete(*, project: Project, provider_id: uuid.UUID | str) -> PushProvider:
    """Removes a provider and its secrets; returns it as it was."""
    provider = or_404(
        push_provider_get(project=project, provider_id=provider_id), "No such push provider."
    )
    if PushProvider.objects.filter(pk=provider.pk).delete()[0] == 0:
        raise NotFound("No such push provider.")
    return provider


SECRET_FIELDS = (
    "service_account_encrypted",
    "apns_private_key_encrypted",
    "web_vapid_private_key_encrypted",
)


def push_provider_secrets_reencrypt(*, batch_size: int = 500) -> tuple[int, int]:
    """Every stored provider secret encrypted again with the first SECRETS_ENCRYPTION_KEY
    (key rotation); returns (providers rewritten, secrets no configured key opens). An
    unreadable secret is left as it is: readiness reports it missing."""
    return secrets.rows_reencrypt(PushProvider, SECRET_FIELDS, batch_size=batch_size)
