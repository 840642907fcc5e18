from django.apps import AppConfig


class TopicsConfig(AppConfig):
    name = "contacts.topics"
    label = "topics"
    verbose_name = "Topics"
