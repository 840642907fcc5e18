from django.apps import AppConfig

from contacts.hooks import register_contact_deleted_handler

# A deleted contact's devices stop belonging to anyone the project knows.
register_contact_deleted_handler(
    "pushproviders.services.installations.installations_of_deleted_contact"
)


class PushProvidersConfig(AppConfig):
    name = "pushproviders"
    verbose_name = "Push providers"
