from django.apps import AppConfig


class PushProvidersConfig(AppConfig):
    name = "pushproviders"
    verbose_name = "Push providers"

    def ready(self) -> None:
        # A deleted contact's devices stop belonging to anyone the project knows.
        from contacts.hooks import register_contact_deleted_handler
        from pushproviders.services.installations import installations_of_deleted_contact

        register_contact_deleted_handler(installations_of_deleted_contact)
