from anymail.signals import tracking
from django.apps import AppConfig

from config.hooks import ByPath

# ESP tracking webhooks (/webhooks/email/<esp>) reach us through django-anymail's signal,
# its one integration point; the receiver hands each normalised event to a service.
tracking.connect(
    ByPath("messaging.webhooks.receivers.esp_tracking_received"),
    weak=False,
    dispatch_uid="messaging.esp_tracking_received",
)


class MessagingConfig(AppConfig):
    name = "messaging"
    verbose_name = "Messaging"
