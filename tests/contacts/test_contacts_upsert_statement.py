"""The upsert alone (autocommit, as a request makes it): the contact and its system event in
one statement, the same rows and side effects as a transaction that emits the event."""

from collections.abc import Iterator

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from config.api.errors import PayloadTooLarge
from config.registries import outbox
from contacts.errors import ExternalIdTaken
from contacts.models import Contact
from contacts.services import contact_event_emit, contact_upsert
from events.models import Event
from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def wake_ups() -> Iterator[list[bool]]:
    """What the outbox runs after the commit of recorded events, counted."""
    calls: list[bool] = []

    def committed() -> None:
        calls.append(connection.get_autocommit() and not connection.in_atomic_block)

    outbox.register_system_events_committed(committed)
    yield calls
    outbox.unregister_system_events_committed(committed)


def test_an_upsert_alone_is_one_statement_whatever_it_does(world):
    for fields, expected in [
        ({"plan": "pro"}, "sendrealm.contact.created"),
        ({"plan": "max"}, "sendrealm.contact.updated"),
        ({"plan": "max"}, None),
    ]:
        Event.objects.all().delete()
        with CaptureQueriesContext(connection) as queries:
            contact_upsert(project=world.project, email="a@example.com", fields=fields)
        assert len(queries) == 1, [query["sql"] for query in queries]
        assert list(Event.objects.values_list("event", flat=True)) == (
            [expected] if expected else []
        )


@pytest.mark.parametrize("external_id", [None, "u-1"])
def test_the_statements_event_is_the_row_contact_event_emit_writes(world, clock, external_id):
    contact, _ = contact_upsert(
        project=world.project, email="a@example.com", external_id=external_id
    )
    changed, _ = contact_upsert(project=world.project, email="a@example.com", fields={"x": 1})
    written = list(Event.objects.order_by("event"))
    with transaction.atomic():
        for name, each in [("contact.created", contact), ("contact.updated", changed)]:
            contact_event_emit(
                project=world.project,
                name=name,
                contact=each,
                payload={
                    "contact_id": str(each.id),
                    "email": each.email,
                    "external_id": each.external_id,
                },
            )
    emitted = list(Event.objects.exclude(id__in=[row.id for row in written]).order_by("event"))

    columns = [f.attname for f in Event._meta.concrete_fields if f.attname != "id"]
    assert [[getattr(row, c) for c in columns] for row in written] == [
        [getattr(row, c) for c in columns] for row in emitted
    ]
    assert [row.event for row in written] == [
        "sendrealm.contact.created",
        "sendrealm.contact.updated",
    ]
    assert written[0].payload == {
        "contact_id": str(contact.id),
        "email": "a@example.com",
        "external_id": external_id,
    }
    # Time-ordered ids, as the emitted events' own.
    assert [row.id.version for row in written] == [row.id.version for row in emitted] == [7, 7]


def test_the_returned_contact_is_the_stored_row(world):
    for fields in [{"a": 1, "b": [1, "é"]}, {"a": None}, {"b": [1, "é"]}]:
        contact, _ = contact_upsert(
            project=world.project, email="a@example.com", fields=fields, external_id="u-1"
        )
        stored = Contact.objects.get(id=contact.id)
        columns = [f.attname for f in Contact._meta.concrete_fields]
        assert [getattr(contact, c) for c in columns] == [getattr(stored, c) for c in columns]


def test_a_written_upsert_wakes_the_event_workers_and_a_no_op_does_not(world, wake_ups):
    contact_upsert(project=world.project, email="a@example.com", fields={"a": 1})
    contact_upsert(project=world.project, email="a@example.com", fields={"a": 1})
    contact_upsert(project=world.project, email="a@example.com", fields={"a": 2})
    # Twice, each after its statement committed (in autocommit, at once).
    assert wake_ups == [True, True]


def test_an_external_id_of_another_contact_is_409_and_writes_nothing(world):
    ContactFactory(project=world.project, email="a@example.com", external_id="u-1")
    other = ContactFactory(project=world.project, email="b@example.com", fields={"x": 1})

    with pytest.raises(ExternalIdTaken):
        contact_upsert(
            project=world.project, email="b@example.com", external_id="u-1", fields={"x": 2}
        )
    with pytest.raises(ExternalIdTaken):
        contact_upsert(project=world.project, email="c@example.com", external_id="u-1")

    other.refresh_from_db()
    assert (other.fields, other.external_id) == ({"x": 1}, None)
    assert Contact.objects.count() == 2
    assert not Event.objects.exists()


def test_a_merge_over_the_bound_alone_writes_nothing(world):
    world.project.contact_fields_limit_bytes = 1024
    world.project.save(update_fields=["contact_fields_limit_bytes"])
    contact = ContactFactory(project=world.project, email="a@example.com", fields={"a": "x" * 900})

    with pytest.raises(PayloadTooLarge):
        contact_upsert(project=world.project, email="a@example.com", fields={"b": "y" * 200})

    contact.refresh_from_db()
    assert contact.fields == {"a": "x" * 900}
    assert not Event.objects.exists()
