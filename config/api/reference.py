"""`/openapi.json` and `/docs`: drf-spectacular's views, with errors in the envelope."""

from typing import Any

from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.envelope import EnvelopeRenderer
from config.api.negotiation import MethodBeforeNegotiation


class _EnvelopeErrors:
    """Errors (405, 406, 500) and OPTIONS answer in the JSON envelope, as on every other
    path, instead of the document's media type or an HTML page."""

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        if response.status_code >= 400 or request.method == "OPTIONS":
            request.accepted_renderer = EnvelopeRenderer()
            request.accepted_media_type = EnvelopeRenderer.media_type
        # A mixin: the view class it is mixed into defines finalize_response.
        final: Response = super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]
        return final


class OpenApiView(MethodBeforeNegotiation, _EnvelopeErrors, SpectacularJSONAPIView):
    pass


class SwaggerView(MethodBeforeNegotiation, _EnvelopeErrors, SpectacularSwaggerView):
    pass
