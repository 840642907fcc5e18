from django.apps import AppConfig


class AudiencesConfig(AppConfig):
    name = "contacts.audiences"
    label = "audiences"
    verbose_name = "Audiences"
