"""OpenAPI generation that shows the envelopes clients really receive."""

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import Direction

from config.api.serializers import ErrorEnvelopeSerializer, ListMetadataSerializer

# Error answers every authenticated operation can give.
COMMON_ERRORS = {
    "400": "Invalid request (`validation_error`, `invalid_json`, `project_required`).",
    "401": "API key missing or invalid (`unauthenticated`).",
    "403": "The key cannot reach this project or action (`forbidden`).",
    "404": "Not found (`not_found`).",
    "405": "Method not allowed (`method_not_allowed`).",
    "500": "Unexpected failure (`internal_error`).",
}

# What an operation without a key (health, the schema itself) can still answer.
UNAUTHENTICATED_ERRORS = frozenset({"405", "500"})


class EnvelopeAutoSchema(AutoSchema):
    """Wraps each success body in `{status, data}` (lists add `metadata`) and attaches the
    error envelope to every error status an operation can answer."""

    extra_error_codes: dict[str, str] = {
        "409": "Conflict (`conflict`, `idempotency_conflict`).",
        "422": "Could not be processed (see `error.code`).",
    }

    def get_auth(self) -> list[dict[str, Any]]:
        # The scheme comes both from the authenticator and from the SECURITY setting;
        # each requirement is listed once.
        unique: list[dict[str, Any]] = []
        for requirement in super().get_auth():
            if requirement not in unique:
                unique.append(requirement)
        return unique

    def _envelope(self, schema: dict[str, Any], status: str) -> dict[str, Any]:
        properties: dict[str, Any] = {
            "status": {"type": "integer", "enum": [int(status)]},
            "data": schema,
        }
        required = ["status", "data"]
        if getattr(self.view, "paginated", False) and self.method == "GET":
            properties["metadata"] = self.resolve_serializer(
                ListMetadataSerializer(), "response"
            ).ref
            required.append("metadata")
        return {"type": "object", "properties": properties, "required": required}

    def _get_response_bodies(self, direction: Direction = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        for status, response in responses.items():
            if not (status.startswith("2") and status.isdigit()):
                continue
            for media in response.get("content", {}).values():
                if "schema" in media:
                    media["schema"] = self._envelope(media["schema"], status)
        error_ref = self.resolve_serializer(ErrorEnvelopeSerializer(), "response").ref
        authenticated = bool(self.get_auth())
        for status, description in {**COMMON_ERRORS, **self.extra_error_codes}.items():
            if status in responses:
                continue
            if not authenticated and status not in UNAUTHENTICATED_ERRORS:
                continue
            responses[status] = {
                "description": description,
                "content": {"application/json": {"schema": error_ref}},
            }
        return responses
