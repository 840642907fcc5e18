from django.apps import AppConfig

from contacts.hooks import register_contact_deleted_handler


class AudiencesConfig(AppConfig):
    name = "contacts.audiences"
    label = "audiences"
    verbose_name = "Audiences"

    def ready(self) -> None:
        # A deleted contact leaves every audience, in the deletion's transaction.
        from contacts.audiences.services import memberships_remove_for_contact

        register_contact_deleted_handler(memberships_remove_for_contact)
