"""Content negotiation with a fast path for the clients every API has: JSON or anything."""

from collections.abc import Iterable, Sequence
from typing import Any

from rest_framework.exceptions import MethodNotAllowed
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

_ANY = frozenset({"", "*/*", "application/json"})


class JsonFirstNegotiation(DefaultContentNegotiation):
    """Picks the view's first renderer without parsing Accept when the client takes JSON or
    anything; other Accept headers go through DRF's full negotiation (and may get 406)."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderers = list(renderers)
        accept = request.META.get("HTTP_ACCEPT", "")
        if not format_suffix and accept in _ANY and renderers:
            first: Any = renderers[0]
            if first.media_type == "application/json" or accept != "application/json":
                return first, first.media_type
        chosen: tuple[BaseRenderer, str] = super().select_renderer(
            request, renderers, format_suffix
        )
        return chosen


class MethodBeforeNegotiation:
    """For the views outside the API's key checks (`/health`, `/docs`, `/openapi.json`):
    a method the view does not serve is 405 whatever `Accept` asks for. DRF negotiates
    the media type first, so a wrong method with an `Accept` the view cannot serve would
    be 406, and which one a client gets would depend on a header unrelated to the error."""

    http_method_names: Sequence[str]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        method = (request.method or "").lower()
        if method not in self.http_method_names or not hasattr(self, method):
            raise MethodNotAllowed(request.method or "")
        # A mixin: the APIView it is mixed into defines initial.
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
