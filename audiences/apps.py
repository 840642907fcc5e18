from django.apps import AppConfig


class AudiencesConfig(AppConfig):
    name = "audiences"
    verbose_name = "Audiences"
