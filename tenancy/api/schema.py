"""How the OpenAPI document describes the API key scheme, the project header of project
endpoints and the empty body of prepare calls (registered in TenancyConfig.ready)."""

from typing import Any

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerExtension,
)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import Direction, OpenApiParameter

from config.api.schema import EnvelopeAutoSchema
from tenancy.api.permissions import PROJECT_HEADER_NAME


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """Documents `ApiKeyAuthentication` as the bearer scheme every operation uses."""

    target_class = "tenancy.api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "sr_… or sr_user_… key"}


class WriteKeyScheme(OpenApiAuthenticationExtension):
    """Documents `WriteKeyAuthentication`: a Segment write key (HTTP Basic, the key as the
    user name and no password), or the bearer key."""

    target_class = "tenancy.api.authentication.WriteKeyAuthentication"
    name = "WriteKey"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "basic",
            "description": "A project key as the user name, an empty password (or the "
            "ApiKey bearer scheme).",
        }


class EmptyBodyScheme(OpenApiSerializerExtension):
    """A prepare call takes `{}` (or no body): an object without members."""

    target_class = "tenancy.preparedactions.api.serializers.EmptyBodySerializer"

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "maxProperties": 0}


class ProjectAutoSchema(EnvelopeAutoSchema):
    """Adds the project header to every operation that acts on one project."""

    def get_override_parameters(self) -> list[Any]:
        parameters: list[Any] = super().get_override_parameters()
        if not getattr(self.view, "project_scoped", True):
            return parameters
        header = OpenApiParameter(
            PROJECT_HEADER_NAME,
            OpenApiTypes.UUID,
            OpenApiParameter.HEADER,
            required=False,
            description=(
                "The project to act on. Personal keys must send it; integration keys "
                "default to their own (or default) project."
            ),
        )
        return [header, *parameters]
