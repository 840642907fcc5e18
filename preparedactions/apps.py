from django.apps import AppConfig


class PreparedActionsConfig(AppConfig):
    name = "preparedactions"
    verbose_name = "Prepared actions"
