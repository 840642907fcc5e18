"""The system event outbox: the contacts family records `sendrealm.*` events through it,
and the events app writes them."""

from collections.abc import Iterator

import pytest
from django.core.exceptions import ImproperlyConfigured

from config import outbox
from contacts.models import Contact
from contacts.services import contact_update, contact_upsert
from events.models import Event
from events.services.system import emit_system_events

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_writer() -> Iterator[None]:
    outbox.unregister_system_event_writer(emit_system_events)
    yield
    outbox.register_system_event_writer(emit_system_events)


def test_the_events_app_writes_the_event_with_the_contacts_identity(world):
    contact, _ = contact_upsert(project=world.project, email="a@example.com", external_id="u-1")
    [event] = Event.objects.all()
    assert (event.event, event.source, event.project_id) == (
        "sendrealm.contact.created",
        "system",
        world.project.id,
    )
    assert (event.contact_id, event.email, event.external_id) == (
        contact.id,
        "a@example.com",
        "u-1",
    )
    assert event.payload == {
        "contact_id": str(contact.id),
        "email": "a@example.com",
        "external_id": "u-1",
    }


def test_a_change_without_a_writer_fails_loudly_and_leaves_nothing(world, no_writer):
    with pytest.raises(ImproperlyConfigured):
        contact_upsert(project=world.project, email="a@example.com")
    assert not Contact.objects.exists()
    assert not Event.objects.exists()


def test_a_no_op_needs_no_writer(world):
    contact, _ = contact_upsert(project=world.project, email="a@example.com", fields={"a": 1})
    outbox.unregister_system_event_writer(emit_system_events)
    try:
        contact_upsert(project=world.project, email="a@example.com", fields={"a": 1})
        contact_update(project=world.project, contact_id=contact.id, fields={"a": 1})
    finally:
        outbox.register_system_event_writer(emit_system_events)
    assert Event.objects.count() == 1


def test_a_second_writer_is_refused():
    def another_writer(**kwargs: object) -> None:
        raise AssertionError("never called")

    with pytest.raises(ImproperlyConfigured):
        outbox.register_system_event_writer(another_writer)  # type: ignore[arg-type]
    outbox.register_system_event_writer(emit_system_events)
