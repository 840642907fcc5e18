from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "tenancy"
    verbose_name = "Teams, projects and API keys"

    def ready(self) -> None:
        # drf-spectacular finds extensions by their import; this one documents the key scheme.
        from tenancy.api import schema  # noqa: F401
