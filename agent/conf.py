"""The settings the agent server reads."""

from django.conf import settings


def api_version() -> str:
    """The version the MCP server announces: the API's own (its OpenAPI schema's)."""
    return str(settings.SPECTACULAR_SETTINGS["VERSION"])
