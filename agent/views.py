"""`POST /mcp`: the MCP endpoint (Streamable HTTP, JSON-RPC 2.0) for personal keys."""

from typing import Any, ClassVar

import orjson
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from agent import direct
from agent.direct import DirectCall, accepts_json, direct_answer, direct_call
from agent.server import SCOPE_KEY, CallScope, serve
from config.api.envelope import error_body
from config.api.errors import Forbidden, MethodNotAllowed, ServiceError
from config.api.lean import LeanAnswer, LeanRequest
from tenancy.access import KeyRecord
from tenancy.api.authentication import api_key_authenticate
from tenancy.errors import RateLimited
from tenancy.ratelimit import RateDecision, rate_limit_enforce

JSON = "application/json"
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


def _json_rpc_refusal(request_id: int | str | None, error: ServiceError) -> JsonResponse:
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
        "id": request_id,
        "status": error.status,
        "error": {"code": KEY_NOT_ACCEPTED, "message": error.message, "data": envelope["error"]},
    }
    return JsonResponse(body, status=error.status)


_INTEGRATION_KEY = (
    "The MCP endpoint accepts only personal keys (`sr_user_`); this is an integration key, "
    "which the REST API takes."
)


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


def _key_checked(authorization: str) -> KeyRecord | HttpResponse:
    """The key, or the refusal of a request without a valid one."""
    try:
        return api_key_authenticate(authorization)
    except ServiceError as error:
        return _refusal(error, {"WWW-Authenticate": "Bearer"})


def _counted(key: KeyRecord) -> RateDecision | HttpResponse | None:
    """The rate limit's decision on the request, or its refusal."""
    try:
        return rate_limit_enforce(key)
    except RateLimited as error:
        refused = _refusal(error, {"Retry-After": str(error.retry_after)})
        error.decision.apply(refused)
        return refused


@method_decorator(csrf_exempt, name="dispatch")
class McpView(View):
    """Checks what HTTP decides (the key and its rate limit, the method, the media types)
    and answers it in the error envelope (an integration key in a JSON-RPC error, which
    MCP clients show); a request that passes is the SDK's to answer in JSON-RPC. Every
    answer to a known key carries its RateLimit headers.

    A `tools/call` the SDK would answer with the tool's result is answered on the lean path
    (config/api/lean.py) by `agent.direct`, with the same checks in the same order: the
    request's media types were checked before it was taken, so what is left is the key,
    its rate limit and its kind."""

    lean_methods: ClassVar[frozenset[str]] = frozenset({"POST"})
    # Nothing but this view reads `Accept` (MCP clients send JSON and event streams).
    lean_own_accept: ClassVar[bool] = True

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        key = _key_checked(request.META.get("HTTP_AUTHORIZATION", ""))
        if isinstance(key, HttpResponse):
            return key
        decision = _counted(key)
        if isinstance(decision, HttpResponse):
            return decision
        response = _answer(request, key, decision)
        if decision is not None:
            decision.apply(response)
        return response

    @classmethod
    def lean_takes(cls, environ: dict[str, Any], body: bytes) -> bool:
        call = direct_call(environ, body)
        if call is None:
            return False
        # Read once: `lean_dispatch` finds it here.
        environ[direct.ENVIRON_KEY] = call
        return True

    @classmethod
    def lean_dispatch(cls, request: LeanRequest, kwargs: dict[str, Any]) -> LeanAnswer:
        call: DirectCall = request.META[direct.ENVIRON_KEY]
        key = _key_checked(request.META.get("HTTP_AUTHORIZATION", ""))
        if isinstance(key, HttpResponse):
            return _lean(key)
        decision = _counted(key)
        if isinstance(decision, HttpResponse):
            return _lean(decision)
        if not key.is_personal:
            refused = _json_rpc_refusal(call.request_id, Forbidden(_INTEGRATION_KEY))
            if decision is not None:
                decision.apply(refused)
            return _lean(refused)
        status, body = direct_answer(call, key=key, rate_limit=decision, outer=request)
        headers = [("Content-Type", JSON)]
        if decision is not None:
            headers.extend(decision.headers())
        return LeanAnswer(status, headers, body)


def _lean(response: HttpResponse) -> LeanAnswer:
    return LeanAnswer(response.status_code, list(response.items()), response.content)


def _answer(request: HttpRequest, key: KeyRecord, decision: RateDecision | None) -> HttpResponse:
    if not key.is_personal:
        return _json_rpc_refusal(_request_id(request), Forbidden(_INTEGRATION_KEY))
    if request.method != "POST":
        # Stateless JSON mode has no stream to open (GET) and no session to end (DELETE).
        return _refusal(
            MethodNotAllowed("The MCP endpoint takes POST only (stateless JSON responses)."),
            {"Allow": "POST"},
        )
    if not accepts_json(request.META.get("HTTP_ACCEPT", "")):
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
