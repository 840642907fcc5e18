"""Bearer API key authentication."""

from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from config.api.errors import Unauthenticated
from tenancy.access import INTEGRATION_PREFIX, KeyRecord
from tenancy.selectors import api_key_record_get
from tenancy.services import api_key_touch


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer sr_…`. Sets `request.auth` to the key's KeyRecord."""

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
        return None, record

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
