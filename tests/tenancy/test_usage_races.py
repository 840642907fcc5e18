"""Meters and quotas under concurrency, with threads against real Redis and PostgreSQL: no
count is lost and no quota is passed (the documented overshoot from concurrent requests
is none: the check and the count are one step in Redis)."""

import datetime as dt
import threading

import pytest

from events.models import Event
from tenancy.models import Meter, UsageDay
from tenancy.services import team_plan_set
from tenancy.usage import _buffer, usage_flush, usage_record
from tenancy.usage_days import usage_days, usage_fold
from tests.conftest import Api
from tests.contacts.test_contacts_races import run_in_threads
from tests.factories import PlanFactory

pytestmark = pytest.mark.django_db(transaction=True)

TODAY = dt.date(2026, 1, 1)


def events_today(world) -> int:
    return usage_days(project=world.project, start=TODAY, end=TODAY)[TODAY]["events_ingested"]


def test_no_count_is_lost_when_threads_record_while_the_buffer_flushes(world, clock, settings):
    settings.USAGE_FLUSH_SECONDS = 0.005
    _buffer.wake.set()  # the flush thread takes the new interval now

    def record(index: int) -> None:
        for _ in range(500):
            usage_record(project=world.project, meter=Meter.EVENTS_INGESTED)

    run_in_threads(8, record)
    usage_flush()

    assert events_today(world) == 4000


def test_no_count_is_lost_or_doubled_while_folds_run_beside_the_writers(world, clock):
    stop = threading.Event()
    folds: list[int] = []

    def fold() -> None:
        while not stop.is_set():
            folds.append(usage_fold())

    folder = threading.Thread(target=fold)
    folder.start()

    def record(index: int) -> None:
        for _ in range(50):
            usage_record(project=world.project, meter=Meter.EMAILS_SENT, count=2)
            usage_flush()

    try:
        run_in_threads(6, record)
    finally:
        stop.set()
        folder.join(timeout=60)
    live = usage_days(project=world.project, start=TODAY, end=TODAY)[TODAY]["emails_sent"]
    usage_fold()

    assert live == 600
    assert sum(folds) > 0
    assert UsageDay.objects.get(project=world.project, date=TODAY).emails_sent == 600
    assert usage_days(project=world.project, start=TODAY, end=TODAY)[TODAY]["emails_sent"] == 600


def test_concurrent_events_never_pass_the_quota(world, clock):
    team_plan_set(team=world.team, plan=PlanFactory(events_ingested_per_month=30))
    key = world.keys["project"]
    Api().get("/project", key=key)  # caches the key

    def send(index: int) -> list[int]:
        api = Api()
        body = {"event": "signed.up", "email": f"u{index}@example.com"}
        return [api.post("/events", body, key=key).status_code for _ in range(5)]

    statuses = [status for batch in run_in_threads(10, send) for status in batch]

    assert statuses.count(202) == 30
    assert statuses.count(422) == 20
    assert Event.objects.filter(project=world.project).count() == 30
    assert events_today(world) == 30


def test_concurrent_batches_never_pass_the_quota(world, clock):
    team_plan_set(team=world.team, plan=PlanFactory(events_ingested_per_month=100))
    key = world.keys["project"]
    Api().get("/project", key=key)

    def send(index: int) -> int:
        events = [{"event": "viewed", "external_id": f"{index}-{n}"} for n in range(20)]
        return Api().post("/events/batch", {"events": events}, key=key).status_code

    statuses = run_in_threads(8, send)

    assert statuses.count(202) == 5
    assert statuses.count(422) == 3
    assert Event.objects.filter(project=world.project).count() == 100
    assert events_today(world) == 100
