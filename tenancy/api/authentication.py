"""Bearer API key authentication."""

from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from config.api.errors import RateLimited, Unauthenticated
from tenancy.access import INTEGRATION_PREFIX, KeyRecord
from tenancy.ratelimit import rate_limit_hit
from tenancy.selectors import api_key_record_get
from tenancy.services import api_key_touch


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer sr_…`. Sets `request.auth` to the key's KeyRecord, then
    counts the request against the key's rate limit: only a known key is limited, so an
    unknown one is 401 however fast it comes. The decision rides on the request for the
    RateLimit headers (ProjectView.finalize_response)."""

    def authenticate(self, request: Request) -> tuple[Any, KeyRecord]:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        scheme, _, secret = header.partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret.startswith(INTEGRATION_PREFIX):
            raise Unauthenticated()
        record = api_key_record_get(secret=secret)
        if record is None or record.revoked:
            raise Unauthenticated()
        api_key_touch(key_id=record.id)
        decision = rate_limit_hit(record)
        request._request.rate_limit = decision  # type: ignore[attr-defined]
        if decision is not None and not decision.allowed:
            raise RateLimited(
                details=f"This key may make {decision.limit} requests per second.",
                retry_after=decision.reset,
            )
        return None, record

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
