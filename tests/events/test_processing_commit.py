"""Event processing when PostgreSQL refuses the COMMIT of a batch: the events are due again
after the backoff at once (not after their lease), nothing the batch did was kept (the
contact it created, its `sendrealm.contact.created`, the catalog's count, the handlers'
writes), and the retry does it all once. The refusals are a trigger of the tests
(tests/config/commit_refusal.py) and, in the last test, the events' own deferred foreign
key to their contact."""

import datetime as dt
import threading

import pytest
from django.db import connection

from contacts.models import Contact
from events.models import Event, EventStatus, EventType
from events.services.deadletter import events_requeue
from events.services.processing import events_process_batch
from tests.config.commit_refusal import DEADLOCK, SERIALIZATION_FAILURE, commit_refusal
from tests.events.conftest import drain
from tests.events.test_processing import ingest

pytestmark = pytest.mark.django_db(transaction=True)


def write_seen(*, event: Event, contact: Contact | None) -> None:
    """A handler that writes in the batch's transaction: the contact's `seen` count."""
    if event.event != "order.completed":
        return
    assert contact is not None
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE contacts_contact SET fields = jsonb_set(fields, '{seen}', "
            "to_jsonb(COALESCE((fields->>'seen')::int, 0) + 1)) WHERE id = %s",
            [contact.id],
        )


def test_a_batch_whose_commit_fails_is_retried_at_once_and_its_effects_are_made_once(
    world, clock, handler
):
    handler(write_seen)
    known = Contact.objects.create(project=world.project, email="known@example.com")
    fresh = ingest(world, email="new@example.com")
    other = ingest(world, email="known@example.com")

    with commit_refusal("events_event") as refusal:
        refusal.refuse([fresh.pk], error=SERIALIZATION_FAILURE)
        outcome = events_process_batch()

    assert (outcome.claimed, outcome.processed, outcome.failed) == (2, [], 2)
    for event in (fresh, other):
        event.refresh_from_db()
        assert (event.status, event.attempts, event.error_code) == (
            EventStatus.FAILED,
            1,
            "commit_failed",
        )
        assert (event.claim_token, event.processed_at, event.contact_id) == (None, None, None)
        # The events' first backoff (2 s, half of it random), from now: not the 60 s lease.
        assert clock() + dt.timedelta(seconds=1) <= event.next_attempt_at
        assert event.next_attempt_at <= clock() + dt.timedelta(seconds=2)
    assert not Contact.objects.filter(email="new@example.com").exists()
    assert not Event.objects.filter(event="sendrealm.contact.created").exists()
    assert not EventType.objects.filter(event="order.completed").exists()
    known.refresh_from_db()
    assert "seen" not in known.fields

    clock.advance(seconds=2)
    drain()

    created = Contact.objects.get(email="new@example.com")
    for event, contact in ((fresh, created), (other, known)):
        event.refresh_from_db()
        assert (event.status, event.attempts, event.contact_id) == (
            EventStatus.PROCESSED,
            2,
            contact.id,
        )
        contact.refresh_from_db()
        assert contact.fields["seen"] == 1
    assert Event.objects.filter(event="sendrealm.contact.created").count() == 1
    assert EventType.objects.get(event="order.completed").occurrences_count == 2


def test_an_event_whose_commits_keep_failing_is_dead_lettered_and_can_be_requeued(
    world, clock, settings
):
    settings.EVENTS_RETRY_MAX_ATTEMPTS = 2
    event = ingest(world, email="ada@example.com")

    with commit_refusal("events_event") as refusal:
        refusal.refuse([event.pk], error=DEADLOCK)
        events_process_batch()
        event.refresh_from_db()
        clock.set(event.next_attempt_at)
        outcome = events_process_batch()

    assert outcome.dead_lettered == 1
    event.refresh_from_db()
    assert (event.status, event.attempts, event.error_code) == (
        EventStatus.DEAD_LETTERED,
        2,
        "commit_failed",
    )
    assert event.last_error.startswith("CommitFailed: OperationalError: refused at commit")
    assert not Contact.objects.filter(email="ada@example.com").exists()

    assert events_requeue(ids=[event.pk]) == 1
    drain()
    event.refresh_from_db()
    assert event.status == EventStatus.PROCESSED
    assert event.contact_id == Contact.objects.get(email="ada@example.com").id


def test_a_contact_removed_while_its_event_was_processed_fails_the_commit_not_the_worker(
    world, clock, handler
):
    """No trigger of the tests: the event's foreign key to its contact is checked at COMMIT
    (deferred), and another transaction removed the contact the batch had resolved (a
    purge), so PostgreSQL refuses the commit. The retry resolves the email again."""
    contact = Contact.objects.create(project=world.project, email="gone@example.com")
    event = ingest(world, email="gone@example.com")
    removed: list[int] = []

    def purge() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("DELETE FROM contacts_contact WHERE id = %s", [contact.id])
                removed.append(cursor.rowcount)
        finally:
            connection.close()

    def remove_it_meanwhile(*, event: Event, contact: Contact | None) -> None:
        if not removed:
            thread = threading.Thread(target=purge)
            thread.start()
            thread.join()

    handler(remove_it_meanwhile)
    outcome = events_process_batch()

    assert (removed, outcome.processed, outcome.failed) == ([1], [], 1)
    event.refresh_from_db()
    assert (event.status, event.error_code, event.contact_id) == (
        EventStatus.FAILED,
        "commit_failed",
        None,
    )
    assert event.last_error.startswith("CommitFailed: IntegrityError: ")
    assert "contact_id" in event.last_error

    clock.advance(seconds=2)
    drain()
    event.refresh_from_db()
    assert event.status == EventStatus.PROCESSED
    assert event.contact_id == Contact.objects.get(email="gone@example.com").id != contact.id
