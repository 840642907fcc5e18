from django.apps import AppConfig


class PreparedActionsConfig(AppConfig):
    name = "tenancy.preparedactions"
    label = "preparedactions"
    verbose_name = "Prepared actions"
