"""OpenAPI generation that shows the envelopes clients really receive."""

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance, get_doc
from drf_spectacular.utils import Direction, OpenApiResponse
from rest_framework import serializers

from config.api.pagination import DEFAULT_LIMIT, MAX_LIMIT
from config.api.serializers import (
    ErrorEnvelopeSerializer,
    ListMetadataSerializer,
    StrictSerializer,
)

# Error answers every authenticated operation can give.
COMMON_ERRORS = {
    "400": "Invalid request (`validation_error`, `invalid_json`, `project_required`).",
    "401": "API key missing or invalid (`unauthenticated`).",
    "403": "The key cannot reach this project or action (`forbidden`).",
    "404": "Not found (`not_found`).",
    "405": "Method not allowed (`method_not_allowed`).",
    "406": "`Accept` excludes JSON (`not_acceptable`).",
    "429": "The key made more requests per second than its limit (`rate_limited`); wait "
    "`Retry-After` seconds.",
    "500": "Unexpected failure (`internal_error`).",
}

# Headers on every answer to a known key (left out when its limit is off).
RATE_LIMIT_HEADERS = {
    "RateLimit-Limit": "Requests per second this key may make.",
    "RateLimit-Remaining": "Requests left in the current one-second window.",
    "RateLimit-Reset": "Seconds until the window has room again.",
}
# Only operations that take a body can meet these.
BODY_ERRORS = {
    "413": "The body is larger than the endpoint accepts (`request_too_large`).",
    "415": "The body is not JSON (`unsupported_media_type`).",
}

# What an operation without a key (health, the schema itself) can still answer.
UNAUTHENTICATED_ERRORS = frozenset({"405", "406", "500"})

# Cursors this service issues are a few hundred characters at most; a longer one cannot
# be valid, so clients and fuzzers know where the bound is.
MAX_CURSOR_LENGTH = 1024

# Query parameters of every list (CONTRACT section 4).
PAGING_PARAMETERS = [
    {
        "in": "query",
        "name": "limit",
        "required": False,
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        "description": f"Items per page, 1 to {MAX_LIMIT}; outside that range is 400.",
    },
    {
        "in": "query",
        "name": "after",
        "required": False,
        "schema": {"type": "string", "minLength": 1, "maxLength": MAX_CURSOR_LENGTH},
        "description": "`metadata.next` of the previous page, as given; anything else is 400.",
    },
]


class EnvelopeAutoSchema(AutoSchema):
    """Wraps each success body in `{status, data}` (lists add `metadata`), attaches the
    error envelope to every error status an operation can answer, and documents the paging
    parameters of every list."""

    extra_error_codes: dict[str, str] = {
        "409": "Conflict (`conflict`, `idempotency_conflict`).",
        "422": "Could not be processed (see `error.code`; `plan_limit_exceeded` when a "
        "monthly quota of the team's plan is used up).",
    }

    def get_auth(self) -> list[dict[str, Any]]:
        # The scheme comes both from the authenticator and from the SECURITY setting;
        # each requirement is listed once.
        unique: list[dict[str, Any]] = []
        for requirement in super().get_auth():
            if requirement not in unique:
                unique.append(requirement)
        return unique

    # drf-spectacular's AutoSchema calls get_description() without arguments; the stub
    # types DRF's older ViewInspector signature (path, method).
    def get_description(self) -> str:  # type: ignore[override]
        # The method's docstring, else the view's own: a base class's docstring describes
        # the code (ProjectView), not the operation.
        method_doc = get_doc(getattr(self.view, self.method.lower(), None))
        view_class = type(self.view)
        return method_doc or (get_doc(view_class) if view_class.__dict__.get("__doc__") else "")

    def _is_list(self) -> bool:
        return bool(getattr(self.view, "paginated", False)) and self.method == "GET"

    def _get_pagination_parameters(self) -> list[dict[str, Any]]:
        if self._is_list():
            return [dict(parameter) for parameter in PAGING_PARAMETERS]
        return []

    def _get_request_body(self, direction: Direction = "request") -> dict[str, Any] | None:
        # drf-spectacular leaves this hook unannotated; untyped_calls_exclude does not reach
        # a call through super().
        body: dict[str, Any] | None = super()._get_request_body(direction)  # type: ignore[no-untyped-call]
        if body is None:
            return None
        # A body that needs some member cannot be left out either.
        if getattr(force_instance(self.get_request_serializer()), "body_rules", None):
            body["required"] = True
        return body

    def _envelope(self, schema: dict[str, Any], status: str, *, nullable: bool) -> dict[str, Any]:
        if nullable:
            schema = {"allOf": [schema], "nullable": True}
        properties: dict[str, Any] = {
            "status": {"type": "integer", "enum": [int(status)]},
            "data": schema,
        }
        required = ["status", "data"]
        if self._is_list():
            properties["metadata"] = self.resolve_serializer(
                ListMetadataSerializer(), "response"
            ).ref
            required.append("metadata")
        return {"type": "object", "properties": properties, "required": required}

    def _get_response_for_code(
        self,
        serializer: Any,
        status_code: str,
        media_types: Any = None,
        direction: Direction = "response",
    ) -> dict[str, Any]:
        # As in _get_request_body: an unannotated hook called through super().
        response: dict[str, Any] = super()._get_response_for_code(  # type: ignore[no-untyped-call]
            serializer, status_code, media_types, direction
        )
        if not (status_code.startswith("2") and status_code.isdigit()):
            return response
        # A view whose success body is not the envelope (Segment's `{"success": true}`).
        if not getattr(self.view, "success_enveloped", True):
            return response
        if isinstance(serializer, OpenApiResponse):
            serializer = serializer.response
        nullable = bool(getattr(force_instance(serializer), "allow_null", False))
        for media in response.get("content", {}).values():
            if "schema" in media:
                media["schema"] = self._envelope(media["schema"], status_code, nullable=nullable)
        return response

    def _get_response_bodies(self, direction: Direction = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        error_ref = self.resolve_serializer(ErrorEnvelopeSerializer(), "response").ref
        authenticated = bool(self.get_auth())
        errors = {**COMMON_ERRORS, **self.extra_error_codes}
        if self.method in ("PUT", "PATCH", "POST"):
            errors.update(BODY_ERRORS)
        for status, description in errors.items():
            if status in responses:
                continue
            if not authenticated and status not in UNAUTHENTICATED_ERRORS:
                continue
            responses[status] = {
                "description": description,
                "content": {"application/json": {"schema": error_ref}},
            }
        if authenticated:
            for status, response in responses.items():
                if status != "401":
                    response.setdefault("headers", {}).update(_rate_limit_headers(status))
        return responses


def _rate_limit_headers(status: str) -> dict[str, Any]:
    headers: dict[str, Any] = {
        name: {"description": description, "schema": {"type": "integer", "minimum": 0}}
        for name, description in RATE_LIMIT_HEADERS.items()
    }
    if status == "429":
        headers["Retry-After"] = {
            "description": "Seconds to wait before the next request.",
            "required": True,
            "schema": {"type": "integer", "minimum": 0},
        }
    return headers


class StrictBodyExtension(OpenApiSerializerExtension):
    """Shows what StrictSerializer enforces: no members beyond the declared ones
    (`additionalProperties: false`) and the rules across members it declares."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer(
            self.target, direction, bypass_extensions=True
        )
        serializer_class = type(self.target)
        # Only a body's own docstring describes it; StrictSerializer's is about the class.
        own_doc = serializer_class.__dict__.get("__doc__")
        if own_doc:
            schema["description"] = get_doc(serializer_class)
        else:
            schema.pop("description", None)
        if direction == "request":
            schema["additionalProperties"] = False
            schema.update(serializer_class.body_rules)
            self._list_bounds(schema)
        return schema

    def _list_bounds(self, schema: dict[str, Any]) -> None:
        # drf-spectacular reads bounds from validators; `many=True` members keep theirs on
        # the list serializer.
        for name, field in self.target.fields.items():
            member = schema.get("properties", {}).get(name)
            if not isinstance(field, serializers.ListSerializer) or member is None:
                continue
            # The stubs do not know these DRF 3.14 arguments of ListSerializer.
            min_length = getattr(field, "min_length", None) or (0 if field.allow_empty else 1)
            max_length = getattr(field, "max_length", None)
            if min_length:
                member["minItems"] = min_length
            if max_length is not None:
                member["maxItems"] = max_length
