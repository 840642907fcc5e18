import threading

import pytest
from django.db import connection, transaction

from config.api.errors import NotFound, ValidationFailed
from contacts.audiences.models import Audience, AudienceMembership
from contacts.models import Contact
from contacts.selectors import contact_get, contact_list_by_identities, contact_resolve
from contacts.services import (
    contact_delete,
    contact_find_for_update,
    contact_get_for_update,
    contact_upsert,
    contacts_lock_active,
)
from events.models import Event
from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db


class Abort(Exception):
    pass


def test_the_created_event_lives_and_dies_with_the_contact(world):
    def upsert_then_fail() -> None:
        with transaction.atomic():
            contact_upsert(project=world.project, email="a@example.com")
            assert Event.objects.filter(event="sendrealm.contact.created", source="system").exists()
            raise Abort

    with pytest.raises(Abort):
        upsert_then_fail()
    assert not Contact.objects.exists()
    assert not Event.objects.exists()


def test_upsert_inside_a_callers_transaction_joins_it(world):
    with transaction.atomic():
        contact, created = contact_upsert(project=world.project, email="a@example.com")
        again, created_again = contact_upsert(
            project=world.project, email="A@example.com", fields={"x": 1}
        )
    assert (created, created_again) == (True, False)
    assert again.id == contact.id
    assert Contact.objects.get().fields == {"x": 1}


def test_upsert_returns_a_contact_equal_to_the_stored_row(world):
    contact, _ = contact_upsert(
        project=world.project, email="a@example.com", fields={"n": 1.5, "l": [1]}, external_id="e"
    )
    stored = Contact.objects.get(id=contact.id)
    assert (contact.email, contact.fields, contact.external_id) == (
        stored.email,
        stored.fields,
        stored.external_id,
    )
    assert contact.created_at == stored.created_at


def test_upsert_rejects_an_invalid_email_and_non_object_fields(world):
    with pytest.raises(ValidationFailed) as error:
        contact_upsert(project=world.project, email="nope")
    assert error.value.issues[0].path == "email"
    with pytest.raises(ValidationFailed) as error:
        contact_upsert(project=world.project, email="a@example.com", fields=["x"])  # type: ignore[arg-type]
    assert error.value.issues[0].path == "fields"
    assert not Contact.objects.exists()


def test_resolve_follows_contact_id_then_external_id_then_email(world):
    by_email = ContactFactory(project=world.project, email="a@example.com")
    by_external = ContactFactory(project=world.project, external_id="x-1")
    resolve = contact_resolve
    assert resolve(project=world.project, email="A@example.com") == by_email
    assert resolve(project=world.project, external_id="x-1", email="a@example.com") == by_external
    assert resolve(project=world.project, contact_id=by_email.id, external_id="x-1") == by_email
    assert resolve(project=world.project, contact_id="not-a-uuid", email="a@example.com") == (
        by_email
    )
    assert resolve(project=world.other_project, email="a@example.com") is None
    assert contact_get(project=world.project, contact_id="garbage") is None


def test_get_for_update_finds_only_an_active_contact_of_the_project(world):
    active = ContactFactory(project=world.project)
    deleted = ContactFactory(project=world.project)
    contact_delete(project=world.project, contact_id=deleted.id)
    with transaction.atomic():
        assert contact_get_for_update(project=world.project, contact_id=active.id) == active
        for project, contact in [(world.project, deleted), (world.other_project, active)]:
            with pytest.raises(NotFound):
                contact_get_for_update(project=project, contact_id=contact.id)


def test_list_by_identities_matches_each_kind_in_its_own_project_only(world):
    by_id = ContactFactory(project=world.project)
    by_external = ContactFactory(project=world.project, external_id="x-1")
    by_email = ContactFactory(project=world.other_project, email="b@example.com")
    ContactFactory(project=world.other_project, external_id="x-1")
    ContactFactory(project=world.project, email="c@example.com", deleted=True)
    found = contact_list_by_identities(
        wanted={
            world.project.id: ({by_id.id}, {"x-1"}, {"b@example.com", "c@example.com"}),
            world.other_project.id: (set(), set(), {"b@example.com"}),
        }
    )
    assert set(found) == {by_id, by_external, by_email}
    assert not contact_list_by_identities(wanted={}).exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("lock", ["one", "many"])
def test_a_contact_locked_for_a_write_lets_a_row_referring_to_it_commit(world, lock):
    """The contact locks order writes of the contact, not rows that merely refer to it: a
    row inserted meanwhile (its foreign key check takes FOR KEY SHARE at commit) is not held
    back. Held back, two event batches, each locking one contact after writing rows that
    refer to the other, deadlocked at commit."""
    contact = ContactFactory(project=world.project)
    audience = Audience.objects.create(project=world.project, name="Readers")
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                if lock == "one":
                    contact_find_for_update(project=world.project, contact_id=contact.id)
                else:
                    contacts_lock_active(project=world.project, contact_ids=[contact.id])
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            AudienceMembership.objects.create(audience=audience, contact=contact)
    finally:
        release.set()
        holder.join()
    assert AudienceMembership.objects.filter(contact=contact).count() == 1
