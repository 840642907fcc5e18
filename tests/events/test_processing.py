"""Processing: identity resolution, the hook point, retries to the dead-letter queue,
leases that outlive a dead worker, and redelivered batches that change nothing twice."""

import datetime as dt
import threading
import time
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contacts.models import Contact
from contacts.services import contact_upsert
from events.conf import RetryPolicy, retry_policy_for
from events.hooks import register_event_batch_handler, unregister_event_batch_handler
from events.models import Event, EventSource, EventStatus, EventType
from events.services.ingest import event_ingest, event_ingest_batch
from events.services.processing import (
    BatchOutcome,
    event_process,
    events_claim,
    events_process_batch,
    events_process_due,
)
from events.tasks import sweep
from events.validation import event_input_parse
from tests.events.conftest import drain

pytestmark = pytest.mark.django_db


def ingest(world, **body):
    body.setdefault("event", "order.completed")
    item = event_input_parse(body, project=world.project)
    return Event.objects.get(id=event_ingest(project=world.project, item=item).id)


def count_calls(contact: Contact) -> int:
    contact.refresh_from_db()
    return int(contact.fields.get("calls", 0))


def bump(*, event, contact) -> None:
    """A handler that writes: counts its calls on the contact, in the event's transaction."""
    if event.source != EventSource.CUSTOMER:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE contacts_contact SET fields = jsonb_set(fields, '{calls}', "
            "to_jsonb(COALESCE((fields->>'calls')::int, 0) + 1)) WHERE id = %s",
            [contact.id],
        )


# --- identity ---


def test_contact_id_resolves_first(world, clock):
    by_id, _ = contact_upsert(project=world.project, email="id@example.com")
    contact_upsert(project=world.project, email="other@example.com", external_id="ext-1")
    event = ingest(world, contact_id=str(by_id.id), external_id="ext-1", email="o@example.com")
    drain()
    event.refresh_from_db()
    assert event.status == EventStatus.PROCESSED
    assert event.contact_id == by_id.id


def test_external_id_resolves_before_email(world, clock):
    by_ext, _ = contact_upsert(project=world.project, email="ext@example.com", external_id="u1")
    contact_upsert(project=world.project, email="mail@example.com")
    event = ingest(world, external_id="u1", email="mail@example.com")
    drain()
    event.refresh_from_db()
    assert event.contact_id == by_ext.id


def test_an_unknown_email_creates_the_contact_and_emits_contact_created(world, clock):
    event = ingest(world, email="New@Example.com")
    drain()
    event.refresh_from_db()
    contact = Contact.objects.get(project=world.project, email="new@example.com")
    assert event.contact_id == contact.id
    created = Event.objects.get(event="sendrealm.contact.created")
    assert created.source == EventSource.SYSTEM
    assert created.contact_id == contact.id
    assert created.status == EventStatus.PROCESSED  # system events are processed too
    assert EventType.objects.filter(event="sendrealm.contact.created", source="system").exists()


def test_a_known_email_resolves_without_creating(world, clock):
    contact, _ = contact_upsert(project=world.project, email="known@example.com")
    event = ingest(world, email="known@example.com")
    drain()
    event.refresh_from_db()
    assert event.contact_id == contact.id
    assert Contact.objects.count() == 1


def test_an_unknown_external_id_with_an_email_is_attached_to_that_contact(world, clock):
    contact, _ = contact_upsert(project=world.project, email="attach@example.com")
    ingest(world, external_id="crm-7", email="attach@example.com")
    drain()
    contact.refresh_from_db()
    assert contact.external_id == "crm-7"


def test_an_email_contact_keeps_its_own_external_id(world, clock):
    contact, _ = contact_upsert(project=world.project, email="keep@example.com", external_id="a")
    event = ingest(world, external_id="b", email="keep@example.com")
    drain()
    contact.refresh_from_db()
    event.refresh_from_db()
    assert contact.external_id == "a"
    assert event.contact_id == contact.id


def test_an_unknown_contact_id_alone_is_dead_lettered_at_once(world, clock):
    event = ingest(world, contact_id=str(uuid.uuid4()))
    drain()
    event.refresh_from_db()
    assert event.status == EventStatus.DEAD_LETTERED
    assert event.attempts == 1
    assert event.error_code == "unknown_contact_id"
    assert "No active contact" in event.last_error


def test_an_unknown_contact_id_falls_back_to_the_email(world, clock):
    event = ingest(world, contact_id=str(uuid.uuid4()), email="fallback@example.com")
    drain()
    event.refresh_from_db()
    assert event.status == EventStatus.PROCESSED
    assert event.contact.email == "fallback@example.com"


def test_a_contact_of_another_project_is_not_found(world, clock):
    foreign, _ = contact_upsert(project=world.other_project, email="f@example.com")
    event = ingest(world, contact_id=str(foreign.id))
    drain()
    event.refresh_from_db()
    assert event.status == EventStatus.DEAD_LETTERED


def test_an_unknown_external_id_alone_retries_until_the_contact_exists(world, clock):
    event = ingest(world, external_id="later")
    drain()
    event.refresh_from_db()
    assert event.status == EventStatus.FAILED
    assert event.error_code == "contact_not_found"
    contact, _ = contact_upsert(project=world.project, email="l@example.com", external_id="later")
    clock.set(event.next_attempt_at)
    drain()
    event.refresh_from_db()
    assert event.status == EventStatus.PROCESSED
    assert event.contact_id == contact.id
    assert event.last_error == ""


# --- contacts within one batch ---


def test_a_batch_with_two_events_of_one_new_email_makes_one_contact(world, clock):
    first = ingest(world, email="twice@example.com")
    clock.advance(seconds=1)
    second = ingest(world, email="Twice@Example.com")
    outcome = events_process_batch()
    assert set(outcome.processed) == {first.id, second.id}
    contact = Contact.objects.get(project=world.project, email="twice@example.com")
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.contact_id == second.contact_id == contact.id
    assert Event.objects.filter(event="sendrealm.contact.created").count() == 1


def fail_when_asked(*, event, contact) -> None:
    if event.payload.get("fail"):
        raise RuntimeError("handler failed")


def test_a_contact_a_failed_event_created_is_unknown_to_the_rest_of_its_batch(
    world, clock, handler
):
    handler(fail_when_asked)
    failing = ingest(world, email="rolled@example.com", payload={"fail": True})
    clock.advance(seconds=1)
    second = ingest(world, email="rolled@example.com")
    outcome = events_process_batch()
    assert outcome.processed == [second.id]
    assert outcome.failed == 1
    contact = Contact.objects.get(project=world.project, email="rolled@example.com")
    second.refresh_from_db()
    failing.refresh_from_db()
    assert second.contact_id == contact.id
    assert (failing.status, failing.contact_id) == (EventStatus.FAILED, None)
    created = Event.objects.filter(event="sendrealm.contact.created")
    assert [e.contact_id for e in created] == [contact.id]

    # The retry finds the contact the second event made.
    Event.objects.filter(id=failing.id).update(payload={})
    clock.set(failing.next_attempt_at)
    drain()
    failing.refresh_from_db()
    assert (failing.status, failing.contact_id) == (EventStatus.PROCESSED, contact.id)
    assert Contact.objects.filter(project=world.project).count() == 1


def test_an_external_id_a_failed_event_attached_is_unknown_to_the_rest_of_its_batch(
    world, clock, handler
):
    handler(fail_when_asked)
    contact, _ = contact_upsert(project=world.project, email="attach@example.com")
    drain()  # its contact.created
    failing = ingest(world, email="attach@example.com", external_id="crm-1", payload={"fail": True})
    clock.advance(seconds=1)
    by_external_id = ingest(world, external_id="crm-1")
    outcome = events_process_batch()
    assert outcome.processed == []
    failing.refresh_from_db()
    assert failing.status == EventStatus.FAILED
    by_external_id.refresh_from_db()
    assert by_external_id.status == EventStatus.FAILED
    assert by_external_id.error_code == "contact_not_found"
    contact.refresh_from_db()
    assert contact.external_id is None


def test_an_external_id_an_event_attached_resolves_the_rest_of_its_batch(world, clock):
    contact, _ = contact_upsert(project=world.project, email="attach@example.com")
    drain()  # its contact.created
    ingest(world, email="attach@example.com", external_id="crm-2")
    clock.advance(seconds=1)
    by_external_id = ingest(world, external_id="crm-2")
    events_process_batch()
    by_external_id.refresh_from_db()
    assert (by_external_id.status, by_external_id.contact_id) == (
        EventStatus.PROCESSED,
        contact.id,
    )


def statements(run) -> int:
    """Statements `run` sends, without the savepoint each event gets."""
    with CaptureQueriesContext(connection) as captured:
        run()
    return sum(
        1
        for query in captured.captured_queries
        if not query["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
    )


def test_a_batch_resolves_its_contacts_in_a_fixed_number_of_statements(world, clock):
    for i in range(30):
        contact_upsert(project=world.project, email=f"q{i}@example.com")
    drain()  # their contact.created
    for i in range(3):
        ingest(world, email=f"q{i}@example.com")
    few = statements(events_process_batch)
    for i in range(3, 30):
        ingest(world, email=f"q{i}@example.com")
    assert statements(events_process_batch) == few


def test_a_batch_creates_its_new_contacts_in_a_fixed_number_of_statements(world, clock):
    # Handlers' per-project state (automations' trigger map) is loaded by a first batch.
    ingest(world, email="n0@example.com")
    drain()
    ingest(world, email="n0@example.com")
    ingest(world, email="n1@example.com")
    few = statements(events_process_batch)
    drain()  # the contact.created events
    for i in range(2, 40):
        ingest(world, email=f"n{i}@example.com")
    assert statements(events_process_batch) == few
    assert Contact.objects.filter(project=world.project).count() == 40
    created = Event.objects.filter(event="sendrealm.contact.created")
    assert created.count() == 40
    assert {event.email for event in created} == {f"n{i}@example.com" for i in range(40)}
    assert all(event.payload["contact_id"] == str(event.contact_id) for event in created)


def test_a_new_email_whose_external_id_another_contact_holds_fails_alone(world, clock):
    holder, _ = contact_upsert(project=world.project, email="holder@example.com")
    contact_upsert(project=world.project, email="holder@example.com", external_id="crm-9")
    drain()
    first = ingest(world, email="fresh1@example.com")
    clock.advance(seconds=1)
    taken = ingest(world, email="fresh2@example.com", external_id="crm-9")
    clock.advance(seconds=1)
    third = ingest(world, email="fresh3@example.com", external_id="crm-10")
    outcome = events_process_batch()
    # crm-9 resolves to its holder (external id before email), so nothing is refused.
    assert set(outcome.processed) == {first.id, taken.id, third.id}
    taken.refresh_from_db()
    assert taken.contact_id == holder.id
    assert not Contact.objects.filter(email="fresh2@example.com").exists()
    third.refresh_from_db()
    made = Contact.objects.get(email="fresh3@example.com")
    assert (third.contact_id, made.external_id) == (made.id, "crm-10")


def test_new_contacts_of_one_batch_are_made_once_each_when_the_batch_is_redone(
    world, clock, handler
):
    handler(fail_when_asked)
    ingest(world, email="a@example.com")
    clock.advance(seconds=1)
    failing = ingest(world, email="b@example.com", payload={"fail": True})
    clock.advance(seconds=1)
    ingest(world, email="c@example.com")
    outcome = events_process_batch()
    assert outcome.failed == 1
    emails = set(Contact.objects.filter(project=world.project).values_list("email", flat=True))
    # The failed event left no contact; the others have theirs, each announced once.
    assert emails == {"a@example.com", "c@example.com"}
    created = Event.objects.filter(event="sendrealm.contact.created")
    assert sorted(event.email for event in created) == ["a@example.com", "c@example.com"]
    failing.refresh_from_db()
    assert (failing.status, failing.contact_id) == (EventStatus.FAILED, None)


# --- the hook point ---


def test_handlers_run_inside_processing_with_the_resolved_contact(world, clock, handler):
    seen = []
    handler(lambda *, event, contact: seen.append((event.event, contact.email)))
    ingest(world, email="hook@example.com")
    drain()
    assert ("order.completed", "hook@example.com") in seen


def test_a_failing_handler_retries_with_backoff_then_dead_letters(world, clock, handler):
    def explode(*, event, contact):
        raise RuntimeError("automation store unavailable")

    handler(explode)
    event = ingest(world, email="retry@example.com")
    delays = []
    for attempt in range(1, 9):
        assert drain() >= 1
        event.refresh_from_db()
        assert event.attempts == attempt
        assert "automation store unavailable" in event.last_error
        assert event.error_code == "exception:RuntimeError"
        if attempt < 8:
            assert event.status == EventStatus.FAILED
            delay = (event.next_attempt_at - clock.current).total_seconds()
            ceiling = min(600, 2 * 2 ** (attempt - 1))
            assert ceiling / 2 <= delay <= ceiling
            delays.append(delay)
            # Not before it is due.
            clock.advance(seconds=delay / 2 - 0.01)
            assert drain() == 0
            clock.set(event.next_attempt_at)
    assert event.status == EventStatus.DEAD_LETTERED
    assert event.next_attempt_at is None
    assert len(delays) == 7
    # Nothing the failing attempts did survived them: no contact was left behind.
    assert not Contact.objects.filter(email="retry@example.com").exists()
    assert drain() == 0


def test_the_retry_policy_follows_settings_and_project_overrides(world, settings):
    default = retry_policy_for(world.project)
    assert default == RetryPolicy(2.0, 2.0, 600.0, 8)
    assert all(
        dt.timedelta(seconds=150) <= default.delay(attempt) <= dt.timedelta(seconds=600)
        for attempt in range(10, 30)
    )
    settings.EVENTS_RETRY_MAX_ATTEMPTS = 3
    assert retry_policy_for(world.project).max_attempts == 3
    world.project.event_retry_max_attempts = 5
    assert retry_policy_for(world.project).max_attempts == 5


def test_a_claim_holds_its_events_for_the_lease_the_setting_gives(world, clock, settings):
    settings.EVENTS_LEASE_SECONDS = 7.5
    ingest(world, email="lease@example.com")

    _, [claimed] = events_claim()

    assert claimed.lease_expires_at == clock.current + dt.timedelta(seconds=7.5)


def test_a_writing_handler_runs_once_per_event_when_a_batch_is_redelivered(world, clock, handler):
    handler(bump)
    contact, _ = contact_upsert(project=world.project, email="once@example.com")
    event = ingest(world, email="once@example.com")
    drain()
    drain()  # the same wake-up delivered again
    assert count_calls(contact) == 1

    # A slow worker whose lease ran out while another worker took over the event.
    second = ingest(world, email="once@example.com")
    slow_token, slow_batch = events_claim()
    clock.advance(seconds=61)
    fast = events_process_batch()
    assert fast.processed == [second.id]
    late = BatchOutcome()
    for claimed in slow_batch:
        event_process(event=claimed, token=slow_token, outcome=late)
    assert late.skipped == 1
    assert late.processed == []
    assert count_calls(contact) == 2
    event.refresh_from_db()
    second.refresh_from_db()
    assert (event.status, second.status) == (EventStatus.PROCESSED, EventStatus.PROCESSED)
    assert second.attempts == 2


def test_a_claim_without_an_outcome_is_taken_over_after_the_lease(world, clock):
    event = ingest(world, email="lease@example.com")
    _, claimed = events_claim()  # a worker that then dies
    assert [e.id for e in claimed] == [event.id]
    clock.advance(seconds=59)
    assert drain() == 0
    clock.advance(seconds=2)
    assert drain() == 2  # the event, then the contact.created its processing emitted
    event.refresh_from_db()
    assert event.status == EventStatus.PROCESSED
    assert event.attempts == 2


def test_an_event_that_keeps_killing_workers_is_dead_lettered(world, clock):
    event = ingest(world, email="poison@example.com")
    for _ in range(8):
        events_claim()
        clock.advance(seconds=61)
    drain()
    event.refresh_from_db()
    assert event.status == EventStatus.DEAD_LETTERED
    assert event.error_code == "worker_lost"


def test_claims_skip_rows_another_worker_holds(world, clock):
    for i in range(5):
        ingest(world, email=f"c{i}@example.com")
    _, first = events_claim(limit=3)
    _, second = events_claim(limit=3)
    assert len(first) == 3
    assert len(second) == 2
    assert not {e.id for e in first} & {e.id for e in second}


# --- catalog, counted once per batch ---


def test_the_catalog_counts_each_event_once_and_merges_types(world, clock):
    ingest(world, email="a@example.com", payload={"total": 1, "items": [{"sku": "a"}]})
    ingest(world, email="a@example.com", payload={"total": None, "coupon": "X"})
    drain()
    entry = EventType.objects.get(project=world.project, event="order.completed")
    assert entry.occurrences_count == 2
    assert entry.field_types == {
        "total": ["null", "number"],
        "items": ["array<object>"],
        "items[].sku": ["string"],
        "coupon": ["string"],
    }
    clock.advance(minutes=5)
    ingest(world, email="b@example.com", payload={"total": 3})
    drain()
    entry.refresh_from_db()
    assert entry.occurrences_count == 3
    assert entry.first_seen_at == dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    assert entry.last_seen_at == dt.datetime(2026, 1, 1, 12, 5, tzinfo=dt.UTC)


def test_events_a_worker_left_uncounted_are_counted_by_the_sweep(world, clock):
    event = ingest(world, email="gap@example.com")
    token, claimed = events_claim()
    event_process(event=claimed[0], token=token, outcome=BatchOutcome())  # then it dies
    assert not EventType.objects.filter(event="order.completed").exists()
    clock.advance(minutes=2)
    sweep()
    entry = EventType.objects.get(event="order.completed")
    assert entry.occurrences_count == 1
    event.refresh_from_db()
    assert event.cataloged_at is not None
    sweep()
    entry.refresh_from_db()
    assert entry.occurrences_count == 1


def test_a_batch_is_processed_in_the_order_its_events_occurred(world, clock, handler):
    seen: list[str] = []

    def record(*, event, contact) -> None:
        if event.source == EventSource.CUSTOMER:
            seen.append(event.payload["n"])

    handler(record)
    contact_upsert(project=world.project, email="order@example.com")
    base = dt.datetime(2026, 1, 1, 11, 0, tzinfo=dt.UTC)
    items = [
        event_input_parse(
            {
                "event": "step.done",
                "email": "order@example.com",
                "payload": {"n": str(n)},
                "occurred_at": (base + dt.timedelta(seconds=n)).isoformat(),
            },
            project=world.project,
        )
        for n in (3, 1, 2, 0)
    ]
    event_ingest_batch(project=world.project, items=items)
    drain()
    assert seen == ["0", "1", "2", "3"]


@pytest.mark.django_db(transaction=True)
def test_a_worker_running_dry_waits_out_the_web_debounce_before_it_stops(world, settings):
    """An event committed just after the worker's last look, while a web process still
    holds off its own wake-up check, is processed by this drain, not the next sweep."""
    settings.EVENTS_WAKE_SETTLE_SECONDS = 0.6
    late: list[uuid.UUID] = []

    def commit_late() -> None:
        try:
            time.sleep(0.2)
            item = event_input_parse(
                {"event": "order.completed", "email": "late@example.com"}, project=world.project
            )
            late.append(event_ingest(project=world.project, item=item).id)
        finally:
            connection.close()

    thread = threading.Thread(target=commit_late)
    thread.start()
    claimed, more = events_process_due(budget_seconds=10)
    thread.join()
    assert not more
    assert claimed >= 1
    assert Event.objects.get(id=late[0]).status == EventStatus.PROCESSED


class Recorder:
    """A batch handler that notes what each opened handler saw and when it was flushed."""

    opened: list["Recorder"] = []

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.flushed = False
        Recorder.opened.append(self)

    def begin(self, *, events) -> None:
        self.begun = [event.email for event in events]

    def handle(self, *, event, contact) -> None:
        self.seen.append(event.email)

    def flush(self) -> None:
        self.flushed = True


@pytest.fixture
def recorder():
    Recorder.opened = []
    register_event_batch_handler(Recorder)
    yield Recorder
    unregister_event_batch_handler(Recorder)


def test_a_batch_handler_sees_the_batch_together_and_is_flushed_once(world, clock, recorder):
    for n in range(3):
        ingest(world, email=f"b{n}@example.com")
        clock.advance(seconds=1)
    events_process_batch()
    [opened] = recorder.opened
    assert opened.begun == ["b0@example.com", "b1@example.com", "b2@example.com"]
    assert opened.seen == ["b0@example.com", "b1@example.com", "b2@example.com"]
    assert opened.flushed


def test_a_batch_redone_event_by_event_gives_each_event_its_own_batch_handler(
    world, clock, handler, recorder
):
    handler(fail_when_asked)
    for n in range(3):
        ingest(world, email=f"r{n}@example.com", payload={"fail": n == 1})
        clock.advance(seconds=1)
    outcome = events_process_batch()
    assert outcome.failed == 1
    together, *alone = recorder.opened
    # The optimistic pass stopped at the failing event, unflushed; then one handler per
    # event, each flushed in its event's savepoint (the failing one never reached).
    assert (together.seen, together.flushed) == (["r0@example.com"], False)
    assert [(each.seen, each.flushed) for each in alone] == [
        (["r0@example.com"], True),
        (["r2@example.com"], True),
    ]
