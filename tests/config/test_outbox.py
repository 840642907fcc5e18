"""The system event outbox: the contacts family records `sendrealm.*` events through it,
and the events app writes them."""

from collections.abc import Iterator
from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.registries import outbox
from config.registries.outbox import SystemEvent
from contacts.models import Contact
from contacts.services import contact_update, contact_upsert
from events.models import Event
from events.services.system import (
    emit_system_event,
    emit_system_events,
    system_events_insert_sql,
)
from events.wake import events_wake

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_writer() -> Iterator[None]:
    """No events app: neither its writer nor the event `INSERT` a statement embeds."""
    outbox.unregister_system_event_writer(emit_system_events)
    outbox.unregister_system_event_statement(system_events_insert_sql)
    yield
    outbox.register_system_event_writer(emit_system_events)
    outbox.register_system_event_statement(system_events_insert_sql)


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


def test_events_written_together_are_the_rows_one_at_a_time_would_be(world, clock):
    contact, _ = contact_upsert(project=world.project, email="a@example.com")
    Event.objects.all().delete()
    payload = {
        "at": clock.current,
        "amount": Decimal("1.50"),
        "id": contact.id,
        "text": 'quotes " and \\ backslashes, {braces}, ünïcödé',
        "nested": {"list": [1, None, True]},
    }
    each = [
        SystemEvent(payload=payload, contact_id=contact.id, email="a@example.com"),
        SystemEvent(payload={**payload, "n": 2}, external_id="u-2"),
    ]

    emit_system_events(project=world.project, name="test.one", events=each[:1])
    emit_system_events(project=world.project, name="test.many", events=each)

    rows = {
        (row.event, row.payload.get("n")): row
        for row in Event.objects.filter(project=world.project)
    }
    one = rows[("sendrealm.test.one", None)]
    first, second = rows[("sendrealm.test.many", None)], rows[("sendrealm.test.many", 2)]
    fields = ("source", "contact_id", "email", "external_id", "payload", "status", "created_at")
    assert [getattr(first, name) for name in fields] == [getattr(one, name) for name in fields]
    assert (second.contact_id, second.email, second.external_id) == (None, None, "u-2")
    assert second.payload == {**one.payload, "n": 2}
    assert first.id != second.id


def test_the_event_a_statement_embeds_is_the_row_the_writer_would_write(world, clock):
    """The constants of the embedded `INSERT` are written into its text: every column of
    the upsert's event is what `emit_system_event` writes for the same contact."""
    contact, _ = contact_upsert(project=world.project, email="a@example.com", external_id="u-1")
    [embedded] = Event.objects.all()
    written = emit_system_event(
        project=world.project,
        name="contact.created",
        payload=embedded.payload,
        contact_id=contact.id,
        email=contact.email,
        external_id=contact.external_id,
    )
    written.refresh_from_db()
    columns = [field.attname for field in Event._meta.concrete_fields if field.attname != "id"]
    assert {name: getattr(embedded, name) for name in columns} == {
        name: getattr(written, name) for name in columns
    }
    assert embedded.occurred_at == embedded.next_attempt_at == embedded.created_at


def test_the_event_workers_are_woken_after_the_commit_of_recorded_events(
    world, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        contact_upsert(project=world.project, email="a@example.com")
    assert events_wake in callbacks


def test_a_no_op_wakes_nothing(world, django_capture_on_commit_callbacks):
    contact_upsert(project=world.project, email="a@example.com", fields={"a": 1})
    with django_capture_on_commit_callbacks() as callbacks:
        contact_upsert(project=world.project, email="a@example.com", fields={"a": 1})
    assert events_wake not in callbacks
