from django.apps import AppConfig

from config.registries.agenttools import register_agent_tools


class TenancyConfig(AppConfig):
    # The OpenAPI extension of the key scheme (tenancy/api/schema.py) registers itself
    # when the project view base imports it, before any schema is generated.
    name = "tenancy"
    verbose_name = "Teams, projects and API keys"

    def ready(self) -> None:
        # Its endpoints as agent tools (the MCP endpoint), imported at first use.
        register_agent_tools("tenancy.api.tools")
