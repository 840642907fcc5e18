"""Errors outside the API views answer in the envelope too, whatever the settings."""

from collections.abc import Callable

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponseBase, JsonResponse

from config.api.exceptions import status_error_body, too_large_details

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
