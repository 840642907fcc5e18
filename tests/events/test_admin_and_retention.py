"""The dead-letter queue in the admin (filter by error, requeue one or many) and retention."""

import datetime as dt

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from events.models import Event, EventStatus
from events.services.retention import events_purge_expired
from events.tasks import purge_expired
from tests.events.conftest import drain
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def make_event(project, status=EventStatus.DEAD_LETTERED, code="contact_not_found", **extra):
    return Event.objects.create(
        project=project,
        event="order.completed",
        email="dl@example.com",
        occurred_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        status=status,
        attempts=8,
        error_code=code,
        last_error=f"{code}: went wrong",
        **extra,
    )


@pytest.fixture
def staff(client):
    user = UserFactory(username="staff@example.com", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


def test_the_dead_letter_queue_lists_only_dead_lettered_events_and_filters_by_error(staff, world):
    dead = make_event(world.project)
    other = make_event(world.project, code="exception:RuntimeError")
    make_event(world.project, status=EventStatus.PROCESSED, code="")
    url = reverse("admin:events_deadletteredevent_changelist")
    page = staff.get(url)
    assert page.status_code == 200
    assert set(page.context["cl"].result_list) == {dead, other}
    filtered = staff.get(url, {"error": "exception:RuntimeError"})
    assert list(filtered.context["cl"].result_list) == [other]


def test_requeue_in_bulk_gives_fresh_attempts_and_the_events_get_processed(staff, world, clock):
    events = [make_event(world.project) for _ in range(3)]
    processed = make_event(world.project, status=EventStatus.PROCESSED)
    url = reverse("admin:events_deadletteredevent_changelist")
    response = staff.post(
        url,
        {"action": "requeue", "_selected_action": [str(e.pk) for e in [*events, processed]]},
    )
    assert response.status_code == 302
    for event in events:
        event.refresh_from_db()
        assert event.status == EventStatus.ACCEPTED
        assert event.attempts == 0
        assert event.next_attempt_at == clock.current
    processed.refresh_from_db()
    assert processed.status == EventStatus.PROCESSED
    drain()
    assert all(Event.objects.get(pk=e.pk).status == EventStatus.PROCESSED for e in events)


def test_requeue_one_from_its_page(staff, world, clock):
    event = make_event(world.project)
    change = staff.get(reverse("admin:events_deadletteredevent_change", args=[event.pk]))
    assert b"Requeue this event" in change.content
    url = reverse("admin:events_deadletteredevent_requeue", args=[event.pk])
    assert staff.get(url).status_code == 405
    assert staff.post(url).status_code == 302
    event.refresh_from_db()
    assert event.status == EventStatus.ACCEPTED


def test_a_requeue_address_without_an_event_id_is_not_found(staff, world):
    url = reverse("admin:events_deadletteredevent_changelist") + "not-an-id/requeue/"
    response = staff.post(url, follow=True)
    # The admin's own fallback for an unknown object ("does not exist"), never a 500.
    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("admin:index")


def test_requeue_needs_staff(client, world):
    event = make_event(world.project)
    url = reverse("admin:events_deadletteredevent_requeue", args=[event.pk])
    client.post(url)
    event.refresh_from_db()
    assert event.status == EventStatus.DEAD_LETTERED


def test_staff_who_may_only_view_the_queue_cannot_requeue(client, world):
    user = UserFactory(username="queue-viewer@example.com", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_deadletteredevent"))
    client.force_login(user)
    event = make_event(world.project)
    url = reverse("admin:events_deadletteredevent_changelist")
    page = client.get(url)
    assert page.status_code == 200
    assert b"Requeue the selected dead-lettered events" not in page.content
    client.post(url, {"action": "requeue", "_selected_action": [str(event.pk)]})
    change = client.get(reverse("admin:events_deadletteredevent_change", args=[event.pk]))
    assert b"Requeue this event" not in change.content
    single = client.post(reverse("admin:events_deadletteredevent_requeue", args=[event.pk]))
    assert single.status_code == 403
    event.refresh_from_db()
    assert event.status == EventStatus.DEAD_LETTERED


def test_retention_deletes_events_older_than_the_project_policy(world, clock):
    world.other_project.event_retention_days = 10
    world.other_project.save()
    old = make_event(
        world.project,
        status=EventStatus.PROCESSED,
        created_at=clock.current - dt.timedelta(days=91),
    )
    kept = make_event(
        world.project,
        status=EventStatus.PROCESSED,
        created_at=clock.current - dt.timedelta(days=89),
    )
    short = make_event(
        world.other_project,
        status=EventStatus.PROCESSED,
        created_at=clock.current - dt.timedelta(days=11),
    )
    busy = make_event(
        world.project,
        status=EventStatus.PROCESSING,
        created_at=clock.current - dt.timedelta(days=200),
    )
    assert purge_expired() == 2
    remaining = set(Event.objects.values_list("id", flat=True))
    assert old.id not in remaining
    assert short.id not in remaining
    assert {kept.id, busy.id} <= remaining


def test_retention_deletes_in_bounded_batches(world, clock):
    for _ in range(7):
        make_event(world.project, created_at=clock.current - dt.timedelta(days=100))
    assert events_purge_expired(batch_size=2, max_rows=5) == 5
    assert events_purge_expired(batch_size=2, max_rows=5) == 2
    assert Event.objects.count() == 0
