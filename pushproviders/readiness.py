"""What a provider still needs before it can send, and the decrypted credentials a sender
uses once it can. A stored secret that cannot be decrypted or no longer parses counts as
missing; the reason is kept for the staff console, never for API answers."""

import json
import time
from dataclasses import dataclass, field

from config.runtime import secrets
from pushproviders import credentials
from pushproviders.credentials import CredentialInvalid, ServiceAccount
from pushproviders.models import ApnsEnvironment, Platform, ProviderStatus, PushProvider

# The settings each platform needs, in the order `readiness.missing` lists them.
REQUIRED: dict[str, tuple[str, ...]] = {
    Platform.FCM: ("service_account",),
    Platform.APNS: ("apns_key_id", "apns_team_id", "apns_private_key", "apns_bundle_id"),
    Platform.WEBPUSH: ("web_vapid_public_key", "web_vapid_private_key", "web_vapid_subject"),
}


@dataclass(frozen=True)
class Readiness:
    missing: list[str]
    # Setting -> why a stored value does not count (for staff; never a secret's content).
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return not self.missing


@dataclass(frozen=True)
class FcmCredentials:
    service_account: ServiceAccount


@dataclass(frozen=True)
class ApnsCredentials:
    key_id: str
    team_id: str
    private_key_pem: str
    bundle_id: str
    environment: str


@dataclass(frozen=True)
class WebPushCredentials:
    public_key: str
    private_key: str
    subject: str


Credentials = FcmCredentials | ApnsCredentials | WebPushCredentials


class _Reader:
    """Decrypts and checks a provider's stored secrets once, noting what does not count."""

    def __init__(self, provider: PushProvider) -> None:
        self.provider = provider
        self.reasons: dict[str, str] = {}

    def secret(self, name: str, encrypted: str) -> str | None:
        if not encrypted:
            return None
        try:
            return secrets.decrypt(encrypted)
        except secrets.SecretUnreadable:
            self.reasons[name] = "Stored, but no configured encryption key decrypts it."
            return None

    def service_account(self) -> ServiceAccount | None:
        text = self.secret("service_account", self.provider.service_account_encrypted)
        if text is None:
            return None
        try:
            value = json.loads(text)
            if not isinstance(value, dict):
                raise CredentialInvalid("service_account", "Is not a JSON object.")
            credentials.service_account_checked(value)
        except (ValueError, CredentialInvalid) as error:
            reason = error.message if isinstance(error, CredentialInvalid) else "Is not JSON."
            self.reasons["service_account"] = f"Stored, but malformed: {reason}"
            return None
        return credentials.service_account_from(value)

    def apns_private_key(self) -> str | None:
        text = self.secret("apns_private_key", self.provider.apns_private_key_encrypted)
        if text is None:
            return None
        try:
            return credentials.apns_private_key_checked(text)
        except CredentialInvalid as error:
            self.reasons["apns_private_key"] = f"Stored, but malformed: {error.message}"
            return None

    def vapid_private_key(self) -> str | None:
        encrypted = self.provider.web_vapid_private_key_encrypted
        text = self.secret("web_vapid_private_key", encrypted)
        if text is None:
            return None
        try:
            private = credentials.vapid_private_key_checked(text)
        except CredentialInvalid as error:
            self.reasons["web_vapid_private_key"] = f"Stored, but malformed: {error.message}"
            return None
        public = self.provider.web_vapid_public_key
        if public and credentials.vapid_public_key_of(private) != public:
            self.reasons["web_vapid_private_key"] = "Does not match web_vapid_public_key."
            return None
        return private


def _read(provider: PushProvider) -> tuple[dict[str, object], dict[str, str]]:
    reader = _Reader(provider)
    values: dict[str, object] = {}
    if provider.platform == Platform.FCM:
        values["service_account"] = reader.service_account()
    elif provider.platform == Platform.APNS:
        values["apns_key_id"] = provider.apns_key_id or None
        values["apns_team_id"] = provider.apns_team_id or None
        values["apns_private_key"] = reader.apns_private_key()
        values["apns_bundle_id"] = provider.apns_bundle_id or None
    else:
        values["web_vapid_public_key"] = provider.web_vapid_public_key or None
        values["web_vapid_private_key"] = reader.vapid_private_key()
        values["web_vapid_subject"] = provider.web_vapid_subject or None
    return values, reader.reasons


def provider_readiness(provider: PushProvider) -> Readiness:
    """The settings the provider's platform needs that are not (usably) stored."""
    values, reasons = _read(provider)
    missing = [name for name in REQUIRED[provider.platform] if values.get(name) is None]
    return Readiness(missing=missing, reasons=reasons)


def provider_credentials(provider: PushProvider) -> Credentials | None:
    """The decrypted credentials to send with; None while the provider is not ready.
    Status (`disabled`) is the caller's to check."""
    values, _ = _read(provider)
    return _credentials_of(provider, values)


def _credentials_of(provider: PushProvider, values: dict[str, object]) -> Credentials | None:
    if any(values.get(name) is None for name in REQUIRED[provider.platform]):
        return None
    if provider.platform == Platform.FCM:
        account = values["service_account"]
        assert isinstance(account, ServiceAccount)
        return FcmCredentials(service_account=account)
    if provider.platform == Platform.APNS:
        return ApnsCredentials(
            key_id=provider.apns_key_id,
            team_id=provider.apns_team_id,
            private_key_pem=str(values["apns_private_key"]),
            bundle_id=provider.apns_bundle_id,
            environment=provider.apns_environment or ApnsEnvironment.PRODUCTION,
        )
    return WebPushCredentials(
        public_key=provider.web_vapid_public_key,
        private_key=str(values["web_vapid_private_key"]),
        subject=provider.web_vapid_subject,
    )


@dataclass(frozen=True)
class SendProblem:
    """Why an installation of a platform cannot be sent to now (kept on its delivery)."""

    code: str
    message: str


# Reading a provider decrypts and parses its stored keys (an RSA key takes tens of
# milliseconds), so senders reuse what they read per process while the stored settings are
# unchanged; the time bound covers what the settings do not show (the configured
# encryption keys). The decrypted credentials stay in this process's memory as long.
SEND_STATE_CACHE_SECONDS = 60.0
SEND_STATE_CACHE_SIZE = 256


@dataclass(frozen=True)
class SendState:
    readiness: Readiness
    credentials: Credentials | None


_send_states: dict[int, tuple[float, SendState]] = {}


def _settings_key(provider: PushProvider) -> int:
    return hash(
        (
            provider.pk,
            provider.platform,
            provider.service_account_encrypted,
            provider.apns_key_id,
            provider.apns_team_id,
            provider.apns_private_key_encrypted,
            provider.apns_bundle_id,
            provider.apns_environment,
            provider.web_vapid_public_key,
            provider.web_vapid_private_key_encrypted,
            provider.web_vapid_subject,
        )
    )


def provider_send_state(provider: PushProvider) -> SendState:
    """The provider's readiness and credentials, read once and reused for
    SEND_STATE_CACHE_SECONDS while its stored settings (secrets as stored) stay the same."""
    key = _settings_key(provider)
    now = time.monotonic()
    cached = _send_states.get(key)
    if cached is not None and now - cached[0] < SEND_STATE_CACHE_SECONDS:
        return cached[1]
    values, reasons = _read(provider)
    missing = [name for name in REQUIRED[provider.platform] if values.get(name) is None]
    state = SendState(
        readiness=Readiness(missing=missing, reasons=reasons),
        credentials=_credentials_of(provider, values),
    )
    if len(_send_states) >= SEND_STATE_CACHE_SIZE:
        _send_states.clear()
    _send_states[key] = (now, state)
    return state


def provider_send_problem(provider: PushProvider | None, *, platform: str) -> SendProblem | None:
    """None when `provider` may send (it exists, is active and ready); otherwise why not.
    A disabled or unready provider sends nothing and leaves its installations active."""
    if provider is None:
        return SendProblem(code="provider_missing", message=f"The app has no {platform} provider.")
    if provider.status == ProviderStatus.DISABLED:
        return SendProblem(
            code="provider_disabled", message=f"The app's {platform} provider is disabled."
        )
    readiness = provider_send_state(provider).readiness
    if not readiness.ready:
        return SendProblem(
            code="provider_not_ready",
            message=(
                f"The app's {platform} provider is not ready: missing "
                f"{', '.join(readiness.missing)}."
            ),
        )
    return None
