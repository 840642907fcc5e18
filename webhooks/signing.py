"""Standard Webhooks 1.0 signatures: secrets `whsec_<base64>`, and `webhook-signature`
`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` keyed by the secret's decoded
bytes, several separated by spaces."""

import base64
import hashlib
import hmac
import secrets
from collections.abc import Iterable

SECRET_PREFIX = "whsec_"  # noqa: S105 (the format's prefix, not a secret)
# Standard Webhooks asks for 24 to 64 random bytes.
SECRET_BYTES = 32


def secret_new() -> str:
    """A fresh signing secret, as shown to the user once."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(*, secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<signature>` of one message under one secret."""
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signature_header(
    *, secrets_: Iterable[str], webhook_id: str, timestamp: int, body: bytes
) -> str:
    """The `webhook-signature` value: one signature per secret, space-separated."""
    return " ".join(
        signature(secret=secret, webhook_id=webhook_id, timestamp=timestamp, body=body)
        for secret in secrets_
    )
