"""contacts.hooks: families react to a contact's deletion inside its transaction."""

from collections.abc import Iterator

import pytest
from django.db import connection

from contacts.audiences.models import AudienceMembership
from contacts.hooks import register_contact_deleted_handler, unregister_contact_deleted_handler
from contacts.models import Contact
from contacts.services import contact_delete
from tests.contacts.audiences.factories import AudienceMembershipFactory
from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db


class Refused(Exception):
    pass


@pytest.fixture
def registered() -> Iterator[list]:
    added: list = []
    yield added
    for handler in added:
        unregister_contact_deleted_handler(handler)


def test_delete_handlers_get_the_deleted_contact_inside_the_deletion(api, world, registered):
    contact = ContactFactory(project=world.project)
    seen = []

    def record(*, contact: Contact) -> None:
        seen.append((contact.id, contact.deleted_at is not None, connection.in_atomic_block))

    registered.append(register_contact_deleted_handler(record))
    response = api.delete(f"/contacts/{contact.id}", key=world.keys["project"])
    assert response.status_code == 200
    assert seen == [(contact.id, True, True)]


def test_a_failing_delete_handler_rolls_the_whole_deletion_back(world, registered):
    contact = ContactFactory(project=world.project)
    AudienceMembershipFactory(audience__project=world.project, contact=contact)

    def refuse(*, contact: Contact) -> None:
        raise Refused

    # Runs after the audiences' handler, so the memberships it removed come back too.
    registered.append(register_contact_deleted_handler(refuse))
    with pytest.raises(Refused):
        contact_delete(project=world.project, contact_id=contact.id)
    contact.refresh_from_db()
    assert contact.deleted_at is None
    assert AudienceMembership.objects.filter(contact=contact).exists()
