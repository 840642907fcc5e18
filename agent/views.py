"""`POST /mcp`: the MCP endpoint (Streamable HTTP, JSON-RPC 2.0) for personal keys."""

from typing import Any

import orjson
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agent.server import SCOPE_KEY, CallScope, serve
from config.api.envelope import error_body
from config.api.errors import Forbidden, MethodNotAllowed, ServiceError
from tenancy.access import KeyRecord
from tenancy.api.authentication import api_key_authenticate
from tenancy.errors import RateLimited
from tenancy.ratelimit import RateDecision, rate_limit_enforce

JSON = "application/json"
# What an MCP client must accept (the SDK's own test, wildcards included).
_ACCEPTS_JSON = frozenset({JSON, "application/*", "*/*"})
# The JSON-RPC error code of a key /mcp does not take: in the implementation-defined band
# (-32000..-32019), past the SDK's own -32000 and -32001 and the retired -32002.
KEY_NOT_ACCEPTED = -32003


def _refusal(error: ServiceError, headers: dict[str, str] | None = None) -> JsonResponse:
    body = error_body(
        status=error.status,
        code=error.code,
        message=error.message,
        details=error.details,
        issues=[issue.as_dict() for issue in error.issues],
    )
    response = JsonResponse(body, status=error.status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _request_id(request: HttpRequest) -> int | str | None:
    """The id of the JSON-RPC request in the body, when there is one to read."""
    try:
        message = orjson.loads(request.body)
    except (orjson.JSONDecodeError, RequestDataTooBig):
        return None
    value = message.get("id") if isinstance(message, dict) else None
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _json_rpc_refusal(request: HttpRequest, error: ServiceError) -> JsonResponse:
    """A refusal MCP clients show: the official client reads a JSON-RPC error in the body
    of a non-2xx answer and raises it with its message, but reports any other body as
    "Server returned an error response". The envelope's error object is its `data`, and
    `status` the envelope's status."""
    envelope = error_body(
        status=error.status,
        code=error.code,
        message=error.message,
        details=error.details,
        issues=[issue.as_dict() for issue in error.issues],
    )
    body = {
        "jsonrpc": "2.0",
        "id": _request_id(request),
        "status": error.status,
        "error": {"code": KEY_NOT_ACCEPTED, "message": error.message, "data": envelope["error"]},
    }
    return JsonResponse(body, status=error.status)


def _accepts_json(request: HttpRequest) -> bool:
    accepted = request.META.get("HTTP_ACCEPT", "")
    return any(part.split(";")[0].strip().lower() in _ACCEPTS_JSON for part in accepted.split(","))


def _asgi_scope(request: HttpRequest, call: CallScope) -> dict[str, Any]:
    meta = request.META
    headers = [
        (name.lower().encode("latin-1", "replace"), value.encode("latin-1", "replace"))
        for name, value in request.headers.items()
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode("utf-8", "replace"),
        "root_path": "",
        "query_string": meta.get("QUERY_STRING", "").encode("latin-1", "replace"),
        "headers": headers,
        "server": (meta.get("SERVER_NAME", "localhost"), int(meta.get("SERVER_PORT") or 80)),
        "client": (meta.get("REMOTE_ADDR", ""), 0),
        SCOPE_KEY: call,
    }


@csrf_exempt
def mcp_view(request: HttpRequest) -> HttpResponse:
    """Checks what HTTP decides (the key and its rate limit, the method, the media types)
    and answers it in the error envelope (an integration key in a JSON-RPC error, which
    MCP clients show); a request that passes is the SDK's to answer in JSON-RPC. Every
    answer to a known key carries its RateLimit headers."""
    try:
        key = api_key_authenticate(request.META.get("HTTP_AUTHORIZATION", ""))
    except ServiceError as error:
        return _refusal(error, {"WWW-Authenticate": "Bearer"})
    try:
        decision = rate_limit_enforce(key)
    except RateLimited as error:
        refused = _refusal(error, {"Retry-After": str(error.retry_after)})
        error.decision.apply(refused)
        return refused
    response = _answer(request, key, decision)
    if decision is not None:
        decision.apply(response)
    return response


def _answer(request: HttpRequest, key: KeyRecord, decision: RateDecision | None) -> HttpResponse:
    if not key.is_personal:
        return _json_rpc_refusal(
            request,
            Forbidden(
                "The MCP endpoint accepts only personal keys (`sr_user_`); this is an "
                "integration key, which the REST API takes."
            ),
        )
    if request.method != "POST":
        # Stateless JSON mode has no stream to open (GET) and no session to end (DELETE).
        return _refusal(
            MethodNotAllowed("The MCP endpoint takes POST only (stateless JSON responses)."),
            {"Allow": "POST"},
        )
    if not _accepts_json(request):
        return _refusal(
            ServiceError(
                "MCP clients must accept application/json.", code="not_acceptable", status=406
            )
        )
    if request.content_type != JSON:
        return _refusal(
            ServiceError(
                "MCP messages are JSON (Content-Type: application/json).",
                code="unsupported_media_type",
                status=415,
            )
        )
    call = CallScope(key=key, rate_limit=decision, request=request)
    status, headers, body = serve(_asgi_scope(request, call), request.body)
    response = HttpResponse(body, status=status, content_type=JSON)
    for name, value in headers:
        header = name.decode("latin-1")
        if header.lower() not in ("content-type", "content-length"):
            response[header] = value.decode("latin-1")
    return response
