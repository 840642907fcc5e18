"""What conditions read about a contact (`contact.…`), shared by triggers, the engine,
goals and test runs."""

from typing import Any

from contacts.models import Contact


def contact_facts(contact: Contact | None) -> dict[str, Any]:
    """What conditions read as `contact.…`."""
    if contact is None:
        return {}
    return {
        "id": str(contact.id) if contact.pk is not None else None,
        "email": contact.email,
        "external_id": contact.external_id,
        "fields": dict(contact.fields or {}),
    }
