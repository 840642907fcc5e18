"""Maps every exception a view can raise onto the error envelope."""

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from config.api.envelope import enveloped, error_body
from config.api.errors import Issue, RequestTooLarge, ServiceError

logger = logging.getLogger(__name__)

_UNIQUE_VIOLATION = "23505"


def flatten_issues(detail: Any, path: str = "") -> list[Issue]:
    """Turns DRF's nested error detail into issues with dotted paths (`payload.items.0.sku`)."""
    issues: list[Issue] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            child = str(key) if key != "non_field_errors" else ""
            issues.extend(
                flatten_issues(value, f"{path}.{child}" if path and child else path or child)
            )
    elif isinstance(detail, list):
        if all(isinstance(item, (str, drf.ErrorDetail)) for item in detail):
            for item in detail:
                issues.append(
                    Issue(
                        code=getattr(item, "code", None) or "invalid", path=path, message=str(item)
                    )
                )
        else:
            for index, item in enumerate(detail):
                if item:
                    issues.extend(flatten_issues(item, f"{path}.{index}" if path else str(index)))
    else:
        issues.append(
            Issue(code=getattr(detail, "code", None) or "invalid", path=path, message=str(detail))
        )
    return issues


def _body_for(exc: Exception) -> dict[str, Any] | None:
    if isinstance(exc, ServiceError):
        return error_body(
            status=exc.status,
            code=exc.code,
            message=exc.message,
            details=exc.details,
            issues=[issue.as_dict() for issue in exc.issues],
        )
    if isinstance(exc, drf.ParseError):
        # DRF's own parse errors quote the parser's internals; the JSON parser raises
        # InvalidJson with a clean `details` instead.
        return error_body(
            status=400, code="invalid_json", message="The request body could not be parsed."
        )
    if isinstance(exc, RequestDataTooBig):
        # Django's own limit, met by form and multipart bodies.
        return status_error_body(413, too_large_details())
    if isinstance(exc, SuspiciousOperation):
        return error_body(status=400, code="bad_request", message="The request could not be read.")
    if isinstance(exc, drf.ValidationError):
        issues = flatten_issues(exc.detail)
        return error_body(
            status=400,
            code="validation_error",
            message="The request is not valid.",
            issues=[issue.as_dict() for issue in issues],
        )
    if isinstance(exc, DjangoValidationError):
        issues = flatten_issues(getattr(exc, "message_dict", None) or exc.messages)
        return error_body(
            status=400,
            code="validation_error",
            message="The request is not valid.",
            issues=[i.as_dict() for i in issues],
        )
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        return error_body(
            status=401, code="unauthenticated", message="The API key is missing or invalid."
        )
    if isinstance(exc, (drf.PermissionDenied, DjangoPermissionDenied)):
        return error_body(
            status=403,
            code="forbidden",
            message="The API key has no access to this project or action.",
        )
    if isinstance(exc, (drf.NotFound, Http404)):
        return error_body(status=404, code="not_found", message="The resource does not exist.")
    if isinstance(exc, drf.MethodNotAllowed):
        return error_body(status=405, code="method_not_allowed", message=str(exc.detail))
    if isinstance(exc, drf.UnsupportedMediaType):
        return error_body(status=415, code="unsupported_media_type", message=str(exc.detail))
    if isinstance(exc, drf.NotAcceptable):
        return error_body(status=406, code="not_acceptable", message=str(exc.detail))
    if isinstance(exc, drf.Throttled):
        return error_body(status=429, code="rate_limited", message="Too many requests; slow down.")
    if (
        isinstance(exc, IntegrityError)
        and getattr(getattr(exc, "__cause__", None), "sqlstate", None) == _UNIQUE_VIOLATION
    ):
        return error_body(
            status=409, code="conflict", message="The request conflicts with an existing resource."
        )
    return None


def error_body_for(exc: Exception) -> dict[str, Any]:
    """The error envelope an exception answers with, as the API views render it; anything
    unexpected is a logged 500 `internal_error` with no detail."""
    body = _body_for(exc)
    if body is None:
        logger.exception("Unhandled error", exc_info=exc)
        body = error_body(
            status=500, code="internal_error", message="Something went wrong on our side."
        )
    return body


def envelope_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """DRF's exception handler: every failure becomes an error envelope; nothing leaks."""
    body = _body_for(exc)
    if body is None:
        logger.exception(
            "Unhandled error in %s", context.get("view").__class__.__name__, exc_info=exc
        )
        body = error_body(
            status=500, code="internal_error", message="Something went wrong on our side."
        )
    # A request that fails leaves nothing half-written, even under ATOMIC_REQUESTS.
    set_rollback()
    headers = {}
    if body["status"] == 401:
        headers["WWW-Authenticate"] = "Bearer"
    wait = getattr(exc, "wait", None)
    if isinstance(exc, drf.Throttled) and wait:
        headers["Retry-After"] = str(int(wait))
    if isinstance(exc, ServiceError):
        headers.update(exc.response_headers())
    return enveloped(body, status=body["status"], headers=headers)


# What Django answers outside DRF (its error handlers, and the answers the envelope
# middleware converts), by status.
STATUS_ERRORS: dict[int, tuple[str, str]] = {
    400: ("bad_request", "The request could not be read."),
    401: ("unauthenticated", "The API key is missing or invalid."),
    403: ("forbidden", "This request is not allowed."),
    404: ("not_found", "No such path."),
    405: ("method_not_allowed", "This method is not allowed on this path."),
    406: ("not_acceptable", "The answer cannot be given in a media type the client accepts."),
    413: (RequestTooLarge.code, RequestTooLarge.message),
    415: ("unsupported_media_type", "The body's media type is not supported here."),
    429: ("rate_limited", "Too many requests; slow down."),
    500: ("internal_error", "Something went wrong on our side."),
    503: ("service_unavailable", "A service the API depends on is unreachable."),
}


def status_error_body(status: int, details: str = "") -> dict[str, Any]:
    """The error envelope for an HTTP status, when nothing more specific is known."""
    code, message = STATUS_ERRORS.get(status) or (
        ("bad_request", "The request could not be served.")
        if status < 500
        else ("internal_error", "Something went wrong on our side.")
    )
    return error_body(status=status, code=code, message=message, details=details)


def too_large_details() -> str:
    return f"This endpoint accepts bodies of up to {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes."


@csrf_exempt
def not_found_view(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Any path the API does not have, with any method (a POST must not meet CSRF's 403)."""
    return JsonResponse(status_error_body(404), status=404)


def bad_request_view(
    request: HttpRequest, exception: Exception | None = None, *args: Any, **kwargs: Any
) -> JsonResponse:
    """Django's 400 outside DRF (a disallowed Host, a suspicious request, a body over
    Django's upload limit, which is a 413)."""
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse(status_error_body(413, too_large_details()), status=413)
    return JsonResponse(status_error_body(400), status=400)


def permission_denied_view(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Django's 403 outside DRF."""
    return JsonResponse(status_error_body(403), status=403)


def server_error_view(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Django's last resort when an error escapes outside a DRF view."""
    return JsonResponse(status_error_body(500), status=500)
