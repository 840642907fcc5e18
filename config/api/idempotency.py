"""The `Idempotency-Key` request header of the send endpoints: read and checked once, for
every app whose sends take one."""

from rest_framework.request import Request

from config.api.errors import ValidationFailed

HEADER = "Idempotency-Key"


def idempotency_key(request: Request) -> str | None:
    """The request's key, None without one; 400 unless 1 to 255 printable characters."""
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not 1 <= len(key) <= 255 or not key.isprintable():
        raise ValidationFailed.at(HEADER, "Must be 1 to 255 printable characters.", code="invalid")
    return key
