from django.apps import AppConfig


class TenancyConfig(AppConfig):
    # The OpenAPI extension of the key scheme (tenancy/api/schema.py) registers itself
    # when the project view base imports it, before any schema is generated.
    name = "tenancy"
    verbose_name = "Teams, projects and API keys"
