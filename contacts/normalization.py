"""Email normalisation per project policy, and the merge rule of JSON objects that
contacts and audience memberships share."""

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator

from config.api.errors import ValidationFailed
from tenancy.models import EmailNormalization, Project

_validate = EmailValidator()
GMAIL_DOMAINS = frozenset({"gmail.com", "googlemail.com"})


def normalise_email(raw: str, *, policy: str = EmailNormalization.PLAIN) -> str:
    """Trimmed, lower-cased and, under the `gmail` policy, without dots and `+tag` for Gmail.

    Raises ValueError when the result is not a valid address.
    """
    email = raw.strip().lower()
    try:
        _validate(email)
    except ValidationError:
        raise ValueError("not a valid email address") from None
    if policy == EmailNormalization.GMAIL:
        local, _, domain = email.rpartition("@")
        if domain in GMAIL_DOMAINS:
            local = local.split("+", 1)[0].replace(".", "")
            email = f"{local}@gmail.com"
    return email


def email_normalised(*, project: Project, email: Any, path: str = "email") -> str:
    """The project's normal form of `email`; a 400 with an issue at `path` when invalid."""
    if not isinstance(email, str):
        raise ValidationFailed.at(path, "Must be a string.", code="invalid_type")
    try:
        return normalise_email(email, policy=project.email_normalization)
    except ValueError:
        raise ValidationFailed.at(
            path, "Must be a valid email address.", code="invalid_email"
        ) from None


def merge_fields(current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Key-by-key merge; a key set to None is removed."""
    merged = dict(current)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged
