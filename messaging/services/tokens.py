"""Signed tokens in public links: unsubscribe (and, built on the same pattern, tracking).
A token names the email and the recipient; it cannot be forged or altered, and a
tampered one reads as None (the public pages answer 404)."""

import uuid
from dataclasses import dataclass

from django.core import signing

UNSUBSCRIBE_SALT = "messaging.unsubscribe"


@dataclass(frozen=True)
class UnsubscribeToken:
    email_id: uuid.UUID
    recipient: str


def unsubscribe_token(email_id: uuid.UUID | str, recipient: str) -> str:
    """The token of `/u/{token}` for one recipient of one email (URL-safe)."""
    return signing.dumps({"e": str(email_id), "r": recipient}, salt=UNSUBSCRIBE_SALT, compress=True)


def unsubscribe_token_read(token: str) -> UnsubscribeToken | None:
    """What `unsubscribe_token` signed, or None for a tampered or malformed token."""
    try:
        value = signing.loads(token, salt=UNSUBSCRIBE_SALT)
        return UnsubscribeToken(email_id=uuid.UUID(value["e"]), recipient=str(value["r"]))
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        return None
