"""`django.contrib.admin` with the staff console (config/console/site.py) as its default site.
Its own module: INSTALLED_APPS loads it before any model may be imported."""

from django.contrib.admin.apps import AdminConfig


class ConsoleAdminConfig(AdminConfig):
    default_site = "config.console.site.ConsoleSite"
