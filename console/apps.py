from django.apps import AppConfig

from config.metrics_hooks import register_metrics_source
from contacts.hooks import register_timeline_source

# Runs and their steps on a contact's timeline, with a cancel button.
register_timeline_source("console.automations.run_timeline")
# Automation runs by status at every Prometheus scrape.
register_metrics_source("console.automations.runs_by_status")


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Staff console"
