"""Signed tokens in public links: unsubscribe, the open pixel, click redirects and the
preference page. A token names the email (and what the link needs: the recipient, the
original URL) or, for the preference page, the contact; it cannot be forged or altered,
and a tampered or malformed one reads as None (the public pages answer 404).

Each kind has its own salt, so a token of one kind never reads as another. The open and
click tokens carry no timestamp (links keep working as long as the mail is kept); the
click token carries the original URL itself, zlib-compressed when that is shorter, so a
click redirects without a database read and still works after the email is gone."""

import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.core import signing

from messaging import conf

UNSUBSCRIBE_SALT = "messaging.unsubscribe"
OPEN_SALT = "messaging.open"
CLICK_SALT = "messaging.click"
PREFERENCES_SALT = "messaging.preferences"

_BAD_TOKEN = (signing.BadSignature, KeyError, IndexError, TypeError, ValueError, AttributeError)


@dataclass(frozen=True)
class UnsubscribeToken:
    email_id: uuid.UUID
    recipient: str


@dataclass(frozen=True)
class ClickToken:
    email_id: uuid.UUID
    url: str


def unsubscribe_token(email_id: uuid.UUID | str, recipient: str) -> str:
    """The token of `/u/{token}` for one recipient of one email (URL-safe)."""
    return signing.dumps({"e": str(email_id), "r": recipient}, salt=UNSUBSCRIBE_SALT, compress=True)


def unsubscribe_token_read(token: str) -> UnsubscribeToken | None:
    """What `unsubscribe_token` signed, or None for a tampered or malformed token."""
    try:
        value = signing.loads(token, salt=UNSUBSCRIBE_SALT)
        return UnsubscribeToken(email_id=uuid.UUID(value["e"]), recipient=str(value["r"]))
    except _BAD_TOKEN:
        return None


def _uuid(value: uuid.UUID | str) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def open_token(email_id: uuid.UUID | str) -> str:
    """The token of the open pixel `/t/o/{token}` of one email (76 URL-safe characters)."""
    return signing.Signer(salt=OPEN_SALT).sign(_uuid(email_id).hex)


def open_token_read(token: str) -> uuid.UUID | None:
    """The email id `open_token` signed, or None for a tampered or malformed token."""
    try:
        return uuid.UUID(hex=signing.Signer(salt=OPEN_SALT).unsign(token))
    except _BAD_TOKEN:
        return None


def is_web_url(url: str) -> bool:
    """Whether `url` is an absolute http(s) address with a host: the only links that are
    tracked, and so the only places a click token can send anyone."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def click_token(email_id: uuid.UUID | str, url: str) -> str:
    """The token of the click redirect `/t/c/{token}` for one link of one email."""
    return signing.Signer(salt=CLICK_SALT).sign_object([_uuid(email_id).hex, url], compress=True)


def click_token_read(token: str) -> ClickToken | None:
    """The email id and original URL `click_token` signed, or None for a tampered or
    malformed token (or one whose URL is not http(s): the redirect is never open)."""
    try:
        value: Any = signing.Signer(salt=CLICK_SALT).unsign_object(token)
        email_hex, url = value
        if not isinstance(url, str) or not is_web_url(url):
            return None
        return ClickToken(email_id=uuid.UUID(hex=email_hex), url=url)
    except _BAD_TOKEN:
        return None


def preferences_token(contact_id: uuid.UUID | str) -> str:
    """The token of the preference page `/p/{token}` of one contact (76 URL-safe
    characters). It carries no timestamp: the link keeps working as long as the mail is
    kept, as the unsubscribe link does."""
    return signing.Signer(salt=PREFERENCES_SALT).sign(_uuid(contact_id).hex)


def preferences_token_read(token: str) -> uuid.UUID | None:
    """The contact id `preferences_token` signed, or None for a tampered or malformed token."""
    try:
        return uuid.UUID(hex=signing.Signer(salt=PREFERENCES_SALT).unsign(token))
    except _BAD_TOKEN:
        return None


def preferences_url(contact_id: uuid.UUID | str) -> str:
    """`{PUBLIC_BASE_URL}/p/{token}`: the contact's preference page, the `preferences_url`
    every template with a contact renders with."""
    return f"{conf.public_base_url()}/p/{preferences_token(contact_id)}"
