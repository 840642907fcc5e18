"""API key authentication: Bearer, and HTTP Basic for Segment write keys."""

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from config.api.errors import Unauthenticated
from tenancy.access import INTEGRATION_PREFIX, Access, KeyRecord
from tenancy.errors import RateLimited
from tenancy.models import Project
from tenancy.ratelimit import RateDecision, rate_limit_enforce
from tenancy.selectors import api_key_record_get
from tenancy.services import api_key_touch

# The attribute of an HttpRequest the process made itself that says who makes it. An
# attribute, not a header: nothing a client sends ends up there.
_SETTLED = "settled_by_server"


@dataclass(frozen=True, slots=True)
class Settled:
    """What the request that carries an in-process request already decided: its key
    (authenticated and counted against the rate limit there, with that decision) and, when
    it checked one, the project and the key's access to it."""

    key: KeyRecord
    rate_limit: RateDecision | None
    project: Project | None = None
    access: Access | None = None


def request_settle(request: object, settled: Settled) -> None:
    """Marks a request built inside the process (an agent tool's REST call) as made with
    what its carrier already decided, so the view neither authenticates the key again nor
    counts the call a second time against its rate limit. `request` is a Django request,
    or the lean path's (config/api/lean.py), which carries the same attribute."""
    setattr(request, _SETTLED, settled)


def request_settled(request: HttpRequest) -> Settled | None:
    """What `request_settle` recorded on `request`; None for every request from a client."""
    settled = getattr(request, _SETTLED, None)
    return settled if isinstance(settled, Settled) else None


def settled_project(
    request: HttpRequest, *, key: KeyRecord, project_id: str
) -> tuple[Project, Access] | None:
    """The project and access the carrier of `request` checked, when it checked this
    project for this key; None otherwise (the view checks it itself)."""
    settled = request_settled(request)
    if settled is None or settled.project is None or settled.access is None:
        return None
    if settled.access.key != key or settled.access.project_id != project_id:
        return None
    return settled.project, settled.access


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
    RateLimit headers (ProjectView.finalize_response). A request the process made itself
    for one it is serving (`request_settle`) takes that request's key and decision."""

    def authenticate(self, request: Request) -> tuple[Any, KeyRecord]:
        settled = request_settled(request._request)
        if settled is not None:
            # HttpRequest declares no `rate_limit`; ProjectView reads it back with getattr.
            request._request.rate_limit = settled.rate_limit  # type: ignore[attr-defined]
            return None, settled.key
        record = api_key_authenticate(self.authorization(request))
        try:
            decision = rate_limit_enforce(record)
        except RateLimited as refused:
            # As above: an attribute HttpRequest does not declare.
            request._request.rate_limit = refused.decision  # type: ignore[attr-defined]
            raise
        # As above: an attribute HttpRequest does not declare.
        request._request.rate_limit = decision  # type: ignore[attr-defined]
        return None, record

    def authorization(self, request: Request) -> str:
        """The `Authorization` value that presents the key."""
        header: str = request.META.get("HTTP_AUTHORIZATION", "")
        return header

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"


class WriteKeyAuthentication(ApiKeyAuthentication):
    """A Segment write key: HTTP Basic with the key as the user name and an empty password
    (what Segment's clients send), or the usual `Authorization: Bearer sr_…`. Anything
    else, a password included, is 401 as a missing key is."""

    def authorization(self, request: Request) -> str:
        header = super().authorization(request)
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() == "basic":
            return f"Bearer {basic_write_key(credentials)}"
        return header

    def authenticate_header(self, request: Request) -> str:
        return 'Basic realm="api"'


def basic_write_key(credentials: str) -> str:
    """The key of HTTP Basic `credentials` (base64 of `key:`); 401 when they are not that."""
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise Unauthenticated() from None
    key, colon, password = decoded.partition(":")
    if not colon or password or not key:
        raise Unauthenticated()
    return key
