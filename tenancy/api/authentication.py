"""Bearer API key authentication."""

from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from config.api.errors import Unauthenticated
from tenancy.access import INTEGRATION_PREFIX, KeyRecord
from tenancy.selectors import api_key_record_get
from tenancy.services import api_key_touch


def api_key_authenticate(authorization: str) -> KeyRecord:
    """The key an `Authorization` header value presents; 401 when missing, unknown or revoked.

    The API views (through ApiKeyAuthentication) and the MCP endpoint both call it."""
    scheme, _, secret = authorization.partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret.startswith(INTEGRATION_PREFIX):
        raise Unauthenticated()
    record = api_key_record_get(secret=secret)
    if record is None or record.revoked:
        raise Unauthenticated()
    api_key_touch(key_id=record.id)
    return record


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer sr_…`. Sets `request.auth` to the key's KeyRecord."""

    def authenticate(self, request: Request) -> tuple[Any, KeyRecord]:
        return None, api_key_authenticate(request.META.get("HTTP_AUTHORIZATION", ""))

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
