"""The settings the agent server reads."""

from django.conf import settings


def api_version() -> str:
    """The version the MCP server announces: the API's own (its OpenAPI schema's)."""
    return str(settings.SPECTACULAR_SETTINGS["VERSION"])


def audit_flush_seconds() -> float:
    """How long a process keeps tool-call audit rows before writing them; 0 writes each
    on its call's path."""
    return float(settings.AGENT_AUDIT_FLUSH_SECONDS)
