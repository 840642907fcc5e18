from django.apps import AppConfig

from contacts.hooks import register_timeline_source

# Its subscriptions on a contact's timeline in the staff console.
register_timeline_source("contacts.topics.timeline.subscription_timeline")


class TopicsConfig(AppConfig):
    name = "contacts.topics"
    label = "topics"
    verbose_name = "Topics"
