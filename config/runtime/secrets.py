"""Secrets at rest (DKIM private keys, provider credentials): encrypted with Fernet.

The setting `SECRETS_ENCRYPTION_KEY` holds one or more Fernet keys separated by commas. The
first encrypts; every one of them decrypts, so a key is rotated by putting a new one first,
re-encrypting what is stored (`reencrypt`), then dropping the old one.
"""

import base64
import functools
from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

_DERIVATION_INFO = b"sendrealm secrets at rest"


class SecretUnreadable(Exception):
    """A stored secret that none of the configured keys decrypts (a key was dropped too
    early, or the value was altered)."""


def key_derived_from(secret: str) -> str:
    """A Fernet key derived from another secret (Django's SECRET_KEY) with HKDF-SHA256.

    For local and test settings only: production sets its own key, so rotating
    SECRET_KEY does not make every stored secret unreadable.
    """
    raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_DERIVATION_INFO).derive(
        secret.encode()
    )
    return base64.urlsafe_b64encode(raw).decode("ascii")


def keys_parsed(value: str) -> list[Fernet]:
    """The Fernet keys of a comma-separated setting, first (encrypting) key first."""
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if not parts:
        raise ImproperlyConfigured("SECRETS_ENCRYPTION_KEY names no key.")
    keys = []
    for position, part in enumerate(parts, start=1):
        try:
            keys.append(Fernet(part))
        except ValueError:
            # The key itself is never part of the message.
            raise ImproperlyConfigured(
                f"SECRETS_ENCRYPTION_KEY: key {position} is not a Fernet key "
                "(32 url-safe base64-encoded bytes)."
            ) from None
    return keys


@functools.lru_cache(maxsize=4)
def _cipher(value: str) -> MultiFernet:
    return MultiFernet(keys_parsed(value))


def _current() -> MultiFernet:
    return _cipher(settings.SECRETS_ENCRYPTION_KEY)


def encrypt(plaintext: str) -> str:
    """`plaintext` encrypted and authenticated with the first configured key, as text."""
    return _current().encrypt(plaintext.encode()).decode("ascii")


def decrypt(token: str) -> str:
    """The text `encrypt` was given; SecretUnreadable when no configured key opens it."""
    try:
        return _current().decrypt(token.encode("ascii")).decode()
    except (InvalidToken, UnicodeError):
        raise SecretUnreadable("No configured key decrypts this secret.") from None


def reencrypt(token: str) -> str:
    """The same secret encrypted with the first configured key (for key rotation)."""
    try:
        return _current().rotate(token.encode("ascii")).decode("ascii")
    except (InvalidToken, UnicodeError):
        raise SecretUnreadable("No configured key decrypts this secret.") from None


def rows_reencrypt(
    model: type[models.Model], fields: Sequence[str], *, batch_size: int = 500
) -> tuple[int, int]:
    """Every secret stored in `fields` of `model`'s rows encrypted again with the first
    key (`reencrypt`); returns (rows rewritten, secrets no configured key opens). An
    unreadable secret is left as it is. A row is rewritten only while its secrets are
    still the ones read, so a change made meanwhile (a rotation, a PATCH) wins."""
    rewritten = unreadable = 0
    rows = model._default_manager.only("pk", *fields).order_by("pk")
    for row in rows.iterator(chunk_size=batch_size):
        changed = {}
        for name in fields:
            token = getattr(row, name)
            if not token:
                continue
            try:
                changed[name] = reencrypt(token)
            except SecretUnreadable:
                unreadable += 1
        if changed:
            unchanged = {name: getattr(row, name) for name in changed}
            rewritten += model._default_manager.filter(pk=row.pk, **unchanged).update(**changed)
    return rewritten, unreadable
