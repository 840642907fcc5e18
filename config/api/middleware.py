"""Errors outside the API views answer in the envelope too, whatever the settings."""

import time
from collections.abc import Callable

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponseBase, JsonResponse

from config.api.exceptions import status_error_body, too_large_details
from config.observability.metrics import request_observe
from config.observability.requestcontext import request_id_from, request_id_reset, request_id_set

# Headers of an error answer that still mean something once its body is the envelope.
_KEPT_HEADERS = ("Allow", "WWW-Authenticate", "Retry-After")


class ErrorEnvelopeMiddleware:
    """Turns every error answer that is not JSON into the error envelope of its status.

    Outermost, so it also sees what Django makes of exceptions in other middleware (a
    disallowed Host) and, with DEBUG on, its technical 404 and 500 pages, which show the
    URL configuration and settings: those never reach a client.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if response.status_code < 400 or response.get("Content-Type", "").startswith(
            "application/json"
        ):
            return response
        converted = JsonResponse(
            status_error_body(response.status_code), status=response.status_code
        )
        for header in _KEPT_HEADERS:
            if header in response:
                converted[header] = response[header]
        return converted

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponseBase | None:
        # Django answers a body over its upload limit with a plain 400; it is a 413.
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse(status_error_body(413, too_large_details()), status=413)
        return None


class RequestContextMiddleware:
    """Outermost of all: gives the request its id (the client's `X-Request-Id` when it is
    a sane token, else a new one), which every log line and every task published while
    serving it carries and the answer returns; and counts the request and its time by
    route (the URL pattern's name, never the raw path) and status."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        request_id = request_id_from(request.headers.get("X-Request-Id"))
        token = request_id_set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_reset(token)
        response["X-Request-Id"] = request_id
        request_observe(
            route=route_of(request),
            method=request.method or "",
            status=response.status_code,
            seconds=time.perf_counter() - started,
        )
        return response


def route_of(request: HttpRequest) -> str:
    """The name of the URL pattern that served the request (`project-usage`,
    `admin:index`), its pattern when it has no name, `unmatched` for unknown paths."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    if match.view_name and match.url_name:
        return str(match.view_name)
    route = str(match.route or "")
    # The catch-all that answers 404 to every unknown path.
    return "unmatched" if route.startswith("^[") else route or "unmatched"
