from django.apps import AppConfig

from contacts.hooks import register_contact_deleted_handler

# A deleted contact leaves every audience, in the deletion's transaction.
register_contact_deleted_handler("contacts.audiences.services.memberships_remove_for_contact")


class AudiencesConfig(AppConfig):
    name = "contacts.audiences"
    label = "audiences"
    verbose_name = "Audiences"
