"""How the OpenAPI document describes the API key scheme (registered in TenancyConfig.ready)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """Documents `ApiKeyAuthentication` as the bearer scheme every operation uses."""

    target_class = "tenancy.api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "sr_… or sr_user_… key"}
