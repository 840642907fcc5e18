from anymail.signals import tracking
from django.apps import AppConfig

from config.hooks import ByPath
from contacts.hooks import register_timeline_source

# ESP tracking webhooks (/webhooks/email/<esp>) reach us through django-anymail's signal,
# its one integration point; the receiver hands each normalised event to a service.
tracking.connect(
    ByPath("messaging.webhooks.receivers.esp_tracking_received"),
    weak=False,
    dispatch_uid="messaging.esp_tracking_received",
)

# A contact's emails on its timeline in the staff console.
register_timeline_source("messaging.timeline.email_timeline")


class MessagingConfig(AppConfig):
    name = "messaging"
    verbose_name = "Messaging"
