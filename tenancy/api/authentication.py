"""Bearer API key authentication."""

from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from config.api.errors import RateLimited, Unauthenticated
from tenancy.access import INTEGRATION_PREFIX, KeyRecord
from tenancy.ratelimit import rate_limit_enforce
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
    """`Authorization: Bearer sr_…`. Sets `request.auth` to the key's KeyRecord, then
    counts the request against the key's rate limit: only a known key is limited, so an
    unknown one is 401 however fast it comes. The decision rides on the request for the
    RateLimit headers (ProjectView.finalize_response)."""

    def authenticate(self, request: Request) -> tuple[Any, KeyRecord]:
        record = api_key_authenticate(request.META.get("HTTP_AUTHORIZATION", ""))
        try:
            decision = rate_limit_enforce(record)
        except RateLimited as refused:
            request._request.rate_limit = refused.decision  # type: ignore[attr-defined]
            raise
        request._request.rate_limit = decision  # type: ignore[attr-defined]
        return None, record

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
