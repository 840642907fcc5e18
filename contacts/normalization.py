"""Email normalisation per project policy."""

from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator

from tenancy.models import EmailNormalization

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
