"""Content negotiation with a fast path for the clients every API has: JSON or anything."""

from collections.abc import Iterable
from typing import Any

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
        return super().select_renderer(request, renderers, format_suffix)
