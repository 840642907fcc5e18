"""Provider credentials: checking what a user gives (service account, APNs key, VAPID
keys, Web Push subscription keys), generating VAPID key pairs, and turning what is stored
back into credentials a sender can use. Pure functions: no DNS, no network.

Error messages name what is wrong, never the secret's content.
"""

import base64
import binascii
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from config.net import netguard
from pushproviders import conf

SERVICE_ACCOUNT_MEMBERS = ("project_id", "client_email", "private_key", "token_uri")
SERVICE_ACCOUNT_MAX_CHARS = 20_000
APNS_ID = re.compile(r"^[A-Z0-9]{10}$")
BUNDLE_ID = re.compile(r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")
ANDROID_PACKAGE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$")
P256_POINT_BYTES = 65
P256_SCALAR_BYTES = 32
WEB_PUSH_AUTH_BYTES = 16


class CredentialInvalid(ValueError):
    """A credential that cannot be used; `path` is the member (dotted) it came from.
    `others` are the further problems found in the same credential, so that a caller can
    report them all at once (`every`)."""

    def __init__(
        self, path: str, message: str, *, others: Sequence["CredentialInvalid"] = ()
    ) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.others = tuple(others)

    @property
    def every(self) -> tuple["CredentialInvalid", ...]:
        return (self, *self.others)


def _raise_all(problems: list[CredentialInvalid]) -> None:
    if problems:
        first, *others = problems
        raise CredentialInvalid(first.path, first.message, others=others)


def b64url_decoded(value: str) -> bytes:
    """Unpadded (or padded) base64url; ValueError for anything else."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+={0,2}", value):
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def url_checked(url: Any, path: str) -> str:
    """A URL the service may fetch later, as far as its text tells (config.net.netguard's
    `url_well_formed`, with PUSH_ALLOW_HTTP applied): a name is not resolved here, since
    what it resolves to can change before the fetch, which checks it when it connects."""
    if not isinstance(url, str):
        raise CredentialInvalid(path, "Must be a URL.")
    try:
        netguard.url_well_formed(url, allow_loopback_http=conf.allow_http())
    except netguard.UrlRefused as refused:
        raise CredentialInvalid(path, str(refused)) from None
    return url


# FCM ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServiceAccount:
    """What FCM's HTTP v1 API needs: the OAuth token URI and the key that signs for it."""

    project_id: str
    client_email: str
    private_key_pem: str
    token_uri: str
    private_key_id: str


def service_account_parsed(raw: Any, *, path: str = "service_account") -> dict[str, Any]:
    """The service account as a JSON object, from an object or a JSON string; checked
    (members present, key parses, token URI well formed). CredentialInvalid otherwise."""
    if isinstance(raw, str):
        if len(raw) > SERVICE_ACCOUNT_MAX_CHARS:
            raise CredentialInvalid(path, "Is longer than a service account can be.")
        try:
            raw = json.loads(raw)
        except ValueError:
            raise CredentialInvalid(path, "Must be a JSON object or a JSON string.") from None
    if not isinstance(raw, dict):
        raise CredentialInvalid(path, "Must be a JSON object or a JSON string of one.")
    problems = _service_account_problems(raw, path=path)
    if _given(raw, "token_uri"):
        try:
            url_checked(raw["token_uri"], f"{path}.token_uri")
        except CredentialInvalid as problem:
            problems.append(problem)
    _raise_all(problems)
    return raw


@functools.lru_cache(maxsize=32)
def _private_key_loaded(pem: str) -> Any:
    """The key of a PEM text; raises ValueError or TypeError when it is none. Loading an
    RSA key checks it, a tenth of a second or more, so a text checked once in this process
    is not checked again."""
    return serialization.load_pem_private_key(pem.encode(), password=None)


def _given(value: dict[str, Any], member: str) -> bool:
    return isinstance(value.get(member), str) and bool(value[member].strip())


def _service_account_problems(value: dict[str, Any], *, path: str) -> list[CredentialInvalid]:
    """Every problem of a service account's members, in member order."""
    problems = [
        CredentialInvalid(f"{path}.{member}", "Is required (a non-empty string).")
        for member in SERVICE_ACCOUNT_MEMBERS
        if not _given(value, member)
    ]
    if value.get("type", "service_account") != "service_account":
        problems.append(CredentialInvalid(f"{path}.type", "Must be `service_account`."))
    if _given(value, "private_key"):
        try:
            key = _private_key_loaded(value["private_key"])
        except (ValueError, TypeError):
            problems.append(CredentialInvalid(f"{path}.private_key", "Is not a PEM private key."))
        else:
            if not isinstance(key, rsa.RSAPrivateKey):
                problems.append(
                    CredentialInvalid(f"{path}.private_key", "Must be an RSA private key.")
                )
    return problems


def service_account_checked(value: dict[str, Any], *, path: str = "service_account") -> None:
    """The offline checks of a service account (no DNS): members and private key. The
    error raised is the first problem, carrying the others (`CredentialInvalid.every`)."""
    _raise_all(_service_account_problems(value, path=path))


def service_account_from(value: dict[str, Any]) -> ServiceAccount:
    return ServiceAccount(
        project_id=value["project_id"],
        client_email=value["client_email"],
        private_key_pem=value["private_key"],
        token_uri=value["token_uri"],
        private_key_id=str(value.get("private_key_id") or ""),
    )


# APNs -----------------------------------------------------------------------------------


def apns_private_key_checked(raw: Any, *, path: str = "apns_private_key") -> str:
    """The .p8 key's PEM text when it is an EC P-256 private key."""
    if not isinstance(raw, str) or "PRIVATE KEY" not in raw:
        raise CredentialInvalid(path, "Must be the .p8 key as PEM text.")
    try:
        key = serialization.load_pem_private_key(raw.strip().encode(), password=None)
    except (ValueError, TypeError):
        raise CredentialInvalid(path, "Is not a readable PEM private key.") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise CredentialInvalid(path, "Must be an EC P-256 key (the .p8 file from Apple).")
    return raw.strip() + "\n"


def apns_id_checked(raw: Any, path: str) -> str:
    if not isinstance(raw, str) or not APNS_ID.fullmatch(raw):
        raise CredentialInvalid(path, "Must be 10 upper-case letters or digits.")
    return raw


# Web Push -------------------------------------------------------------------------------


def vapid_private_key_checked(raw: Any, *, path: str = "web_vapid_private_key") -> str:
    """A VAPID private key: the P-256 scalar, 32 bytes, as base64url."""
    try:
        scalar = b64url_decoded(raw) if isinstance(raw, str) else b""
    except ValueError:
        scalar = b""
    if len(scalar) != P256_SCALAR_BYTES:
        raise CredentialInvalid(path, "Must be a P-256 private key: 32 bytes as base64url.")
    try:
        ec.derive_private_key(int.from_bytes(scalar, "big"), ec.SECP256R1())
    except ValueError:
        raise CredentialInvalid(path, "Is not a valid P-256 private key.") from None
    return b64url(scalar)


def p256_public_key_checked(raw: Any, path: str) -> str:
    """A P-256 public key as an uncompressed point (65 bytes) in base64url."""
    try:
        point = b64url_decoded(raw) if isinstance(raw, str) else b""
    except ValueError:
        point = b""
    if len(point) != P256_POINT_BYTES or point[0] != 4:
        raise CredentialInvalid(
            path, "Must be a P-256 public key: an uncompressed point (65 bytes) as base64url."
        )
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    except ValueError:
        raise CredentialInvalid(path, "Is not a point on the P-256 curve.") from None
    return b64url(point)


def vapid_public_key_of(private_key: str) -> str:
    """The public key (uncompressed point, base64url) of a checked VAPID private key."""
    scalar = int.from_bytes(b64url_decoded(private_key), "big")
    public = ec.derive_private_key(scalar, ec.SECP256R1()).public_key()
    return b64url(
        public.public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
    )


def vapid_key_pair() -> tuple[str, str]:
    """A new VAPID key pair: (private scalar, public point), both base64url."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = b64url(key.private_numbers().private_value.to_bytes(P256_SCALAR_BYTES, "big"))
    return private, vapid_public_key_of(private)


def vapid_subject_checked(raw: Any, *, path: str = "web_vapid_subject") -> str:
    """A `mailto:` address or an https URL where the push service can reach the sender."""
    if isinstance(raw, str):
        if re.fullmatch(r"mailto:[^@\s]+@[^@\s]+\.[^@\s]+", raw):
            return raw
        if re.fullmatch(r"https://[^\s/]+(/\S*)?", raw):
            return raw
    raise CredentialInvalid(path, "Must be a `mailto:` address or an https URL.")


def subscription_keys_checked(keys: dict[str, Any], *, path: str) -> tuple[str, str]:
    """A Web Push subscription's (`p256dh`, `auth`) when they are the right keys."""
    p256dh = p256_public_key_checked(keys.get("p256dh"), f"{path}.p256dh")
    try:
        auth = b64url_decoded(keys["auth"]) if isinstance(keys.get("auth"), str) else b""
    except ValueError:
        auth = b""
    if len(auth) != WEB_PUSH_AUTH_BYTES:
        raise CredentialInvalid(f"{path}.auth", "Must be 16 bytes as base64url.")
    return p256dh, b64url(auth)
