"""The response envelope: `{status, data}` on success, lists add `metadata`."""

from collections.abc import Mapping
from typing import Any

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder

_ORJSON_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS
_fallback = JSONEncoder().default


class EnvelopeRenderer(JSONRenderer):
    """Wraps a view's payload in the success envelope unless it is already an envelope."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        response = (renderer_context or {}).get("response")
        if response is not None and not getattr(response, "enveloped", False):
            data = {"status": response.status_code, "data": data}
        if data is None:
            return b""
        try:
            return orjson.dumps(data, default=_fallback, option=_ORJSON_OPTIONS)
        except (TypeError, orjson.JSONEncodeError):
            # Beyond orjson (integers over 64 bits): the standard encoder writes them.
            rendered: bytes = super().render(data, accepted_media_type, renderer_context)
            return rendered


def enveloped(body: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> Response:
    """A response whose body is already a complete envelope (errors, lists)."""
    response = Response(body, status=status, headers=headers)
    # A marker Response does not declare; EnvelopeRenderer.render reads it with getattr.
    response.enveloped = True  # type: ignore[attr-defined]
    return response


def error_body(
    *,
    status: int,
    code: str,
    message: str,
    details: str = "",
    issues: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The error envelope of every 4xx and 5xx answer."""
    return {
        "status": status,
        "error": {
            "code": code,
            "message": _printable(message),
            "details": _printable(details),
            "issues": [
                {name: _printable(text) for name, text in issue.items()} for issue in issues or []
            ],
        },
    }


def _printable(text: str) -> str:
    """`text` as UTF-8 can carry it: messages and paths may quote what a client sent, and a
    lone surrogate from a JSON escape cannot be encoded (it becomes `?`)."""
    if text.isascii():
        return text
    return text.encode("utf-8", "replace").decode("utf-8")
