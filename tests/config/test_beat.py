"""One active beat among several (config/beat.py), on the real broker Redis and database:
the lease itself, then two schedulers in one process sending a probe task to a queue of
its own, counted in the broker."""

import datetime as dt
import json
import logging
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks
from redis.backoff import NoBackoff
from redis.retry import Retry

from config.beat import LEASE_KEY, Lease, LeasedScheduler, Role
from config.celery import app
from config.runtime.redisclient import broker_redis_client
from tests.processes import free_port

PROBE = "beat-probe"
PROBE_QUEUE = "beatprobe"


@pytest.fixture
def broker() -> Iterator[redis.Redis]:
    client = broker_redis_client()
    client.delete(LEASE_KEY, PROBE_QUEUE)
    yield client
    client.delete(LEASE_KEY, PROBE_QUEUE)


@pytest.fixture
def key(broker: redis.Redis) -> Iterator[str]:
    name = f"test:lease:{secrets.token_hex(4)}"
    yield name
    broker.delete(name)


# --- the lease ---------------------------------------------------------------------------


def test_of_two_processes_asking_for_a_free_lease_only_one_takes_it(broker, key):
    first, second = Lease(broker, key, 5), Lease(broker, key, 5)

    assert first.acquire() == 0
    wait = second.acquire()

    assert 4 < wait <= 5  # the holder's time left: when the standby asks again
    assert first.holder() == first.token
    assert first.acquire() == 0  # asking again while holding it extends it


def test_only_the_holder_renews_the_lease_and_a_renewal_restores_its_whole_length(broker, key):
    holder, other = Lease(broker, key, 5), Lease(broker, key, 5)
    holder.acquire()
    broker.pexpire(key, 500)

    assert other.renew() is False
    assert broker.pttl(key) <= 500
    assert holder.renew() is True
    assert broker.pttl(key) > 4000


def test_a_standby_takes_the_lease_once_the_holders_runs_out(broker, key):
    holder, standby = Lease(broker, key, 0.3), Lease(broker, key, 0.3)
    holder.acquire()

    wait = standby.acquire()
    assert wait > 0
    time.sleep(wait + 0.05)

    assert standby.acquire() == 0
    assert standby.holder() == standby.token
    assert holder.renew() is False  # the old holder learns it lost it


def test_a_released_lease_is_free_at_once_and_only_its_holder_releases_it(broker, key):
    holder, standby = Lease(broker, key, 60), Lease(broker, key, 60)
    holder.acquire()

    assert standby.release() is False
    assert holder.holder() == holder.token
    assert holder.release() is True
    assert standby.acquire() == 0


def test_a_lease_in_its_last_millisecond_is_still_the_holders(broker, key):
    standby = Lease(broker, key, 5)
    for _ in range(200):  # some of these ask within the holder's last millisecond
        broker.set(key, "holder", px=2)
        time.sleep(0.0015)
        wait = standby.acquire()
        assert (standby.holder() == standby.token) == (wait == 0), wait
        assert wait >= 0
        broker.delete(key)


def test_a_key_without_expiry_is_waited_on_for_a_whole_lease(broker, key):
    broker.set(key, "holder")

    assert Lease(broker, key, 5).acquire() == 5


def test_a_lease_of_no_length_is_refused(broker, key):
    with pytest.raises(Exception, match="BEAT_LEASE_SECONDS"):
        Lease(broker, key, 0)


# --- two schedulers ----------------------------------------------------------------------

pytestmark_db = pytest.mark.django_db(transaction=True)


@pytest.fixture
def probe(broker: redis.Redis) -> PeriodicTask:
    """A periodic task to a queue nothing consumes, due at once: each send is a message
    in the broker's list of that queue."""
    every, _ = IntervalSchedule.objects.get_or_create(every=60, period=IntervalSchedule.SECONDS)
    return PeriodicTask.objects.create(
        name=PROBE,
        task="beat.probe",
        interval=every,
        queue=PROBE_QUEUE,
        last_run_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
    )


def sent(broker: redis.Redis) -> int:
    return int(broker.llen(PROBE_QUEUE))


def due_again() -> None:
    """The probe due again, as an edit in the admin makes it: every scheduler reads the
    schedule again at its next tick."""
    PeriodicTask.objects.filter(name=PROBE).update(
        last_run_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    )
    PeriodicTasks.update_changed()


def ticks(scheduler: LeasedScheduler) -> float:
    """Ticks until the scheduler has nothing due (each tick sends at most one task); the
    wait it asks for then."""
    for _ in range(50):
        wait = scheduler.tick()
        if wait > 0:
            return wait
    raise AssertionError("the scheduler kept sending")


@pytest.fixture
def schedulers(settings: Any, broker: redis.Redis) -> Iterator[list[LeasedScheduler]]:
    settings.BEAT_LEASE_SECONDS = 3.0
    made: list[LeasedScheduler] = []
    yield made
    for scheduler in made:
        scheduler.close()


def scheduler(made: list[LeasedScheduler]) -> LeasedScheduler:
    made.append(LeasedScheduler(app=app))
    return made[-1]


@pytestmark_db
def test_of_two_schedulers_only_the_one_holding_the_lease_sends(schedulers, probe, broker, caplog):
    caplog.set_level(logging.INFO, logger="config.beat")
    first, second = scheduler(schedulers), scheduler(schedulers)

    first_wait = ticks(first)
    second_wait = ticks(second)
    ticks(first)

    assert sent(broker) == 1
    assert (first.role, second.role) == (Role.ACTIVE, Role.STANDBY)
    assert broker.get(LEASE_KEY) == first.lease.token.encode()
    # Each asks again within a third of the lease: the holder to renew it in time.
    assert 0 < first_wait <= 1.0
    assert 0 < second_wait <= 1.0
    messages = [record.getMessage() for record in caplog.records]
    assert any(m.startswith("beat: active, scheduling") for m in messages)
    assert "beat: standing by: another process holds the beat lease" in messages


@pytestmark_db
def test_a_standby_takes_over_when_the_lease_runs_out_and_keeps_the_last_run_it_recorded(
    settings, schedulers, probe, broker, caplog
):
    caplog.set_level(logging.INFO, logger="config.beat")
    settings.BEAT_LEASE_SECONDS = 1.0
    active, standby = scheduler(schedulers), scheduler(schedulers)
    ticks(active)
    wait = ticks(standby)
    assert sent(broker) == 1
    assert standby.role == Role.STANDBY

    # The active process dies: it ticks no more, and its lease runs out.
    deadline = time.monotonic() + settings.BEAT_LEASE_SECONDS + 2
    while standby.role != Role.ACTIVE:
        assert time.monotonic() < deadline, "the standby did not take over"
        time.sleep(wait)
        wait = ticks(standby)

    # It reads the probe's last run as the active one recorded it: not due for a minute.
    assert sent(broker) == 1
    assert standby.schedule[PROBE].last_run_at.year > 2020
    assert broker.get(LEASE_KEY) == standby.lease.token.encode()


@pytestmark_db
def test_a_scheduler_whose_lease_was_taken_sends_nothing_and_stands_by(
    schedulers, probe, broker, caplog
):
    caplog.set_level(logging.INFO, logger="config.beat")
    active = scheduler(schedulers)
    ticks(active)
    broker.set(LEASE_KEY, "another", px=3000)  # as if its lease ran out and was taken
    due_again()

    ticks(active)

    assert sent(broker) == 1
    assert active.role == Role.STANDBY
    assert "beat: standing by, sending nothing: lost the beat lease to another process" in [
        record.getMessage() for record in caplog.records
    ]


@pytestmark_db
def test_a_lease_lost_between_a_tick_and_its_send_sends_nothing(schedulers, probe, broker):
    active = scheduler(schedulers)
    ticks(active)
    entry = active.schedule[PROBE]
    broker.set(LEASE_KEY, "another", px=3000)

    active.apply_entry(entry, producer=active.producer)

    assert sent(broker) == 1
    assert active.role == Role.STANDBY


@pytestmark_db
def test_a_scheduler_that_lost_its_lease_writes_no_last_run(schedulers, probe, broker):
    active = scheduler(schedulers)
    ticks(active)
    recorded = PeriodicTask.objects.get(name=PROBE).last_run_at
    active.reserve(active.schedule[PROBE])  # a send under way: its run not yet written
    broker.set(LEASE_KEY, "another", px=3000)
    ticks(active)

    active.sync()

    assert PeriodicTask.objects.get(name=PROBE).last_run_at == recorded


@pytestmark_db
def test_a_clean_stop_hands_the_lease_over_at_once(schedulers, probe, broker, caplog):
    caplog.set_level(logging.INFO, logger="config.beat")
    active, standby = scheduler(schedulers), scheduler(schedulers)
    ticks(active)
    ticks(standby)

    active.close()

    assert broker.get(LEASE_KEY) is None
    standby.tick()
    assert standby.role == Role.ACTIVE
    assert "beat: stopped, beat lease released" in [r.getMessage() for r in caplog.records]
    assert sent(broker) == 1  # the last run was written on the way out


@pytestmark_db
def test_a_scheduler_that_cannot_reach_redis_sends_nothing_and_stands_by(
    schedulers, probe, broker, caplog
):
    caplog.set_level(logging.INFO, logger="config.beat")
    active = scheduler(schedulers)
    ticks(active)
    due_again()
    # Its Redis goes away: a port nothing listens on.
    unreachable = redis.Redis(
        port=free_port(), socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    token = active.lease.token
    active.lease = Lease(unreachable, LEASE_KEY, active.lease.seconds)
    active.lease.token = token

    wait = active.tick()

    assert sent(broker) == 1
    assert active.role == Role.STANDBY
    assert 0 < wait <= 1.0
    assert any(
        record.getMessage().startswith("beat: standing by, sending nothing: could not renew")
        for record in caplog.records
    )
    assert json.loads(broker.lindex(PROBE_QUEUE, 0))["headers"]["periodic_task_name"] == PROBE


@pytestmark_db
def test_a_starting_scheduler_that_cannot_reach_redis_stands_by_with_a_warning(
    schedulers, probe, broker, caplog
):
    starting = scheduler(schedulers)
    starting.lease = Lease(
        redis.Redis(port=free_port(), socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)),
        LEASE_KEY,
        starting.lease.seconds,
    )

    wait = starting.tick()

    assert starting.role == Role.STANDBY
    assert 0 < wait <= 1.0
    assert sent(broker) == 0
    [record] = [r for r in caplog.records if r.name == "config.beat"]
    assert record.levelno == logging.WARNING
    assert "could not reach Redis for the beat lease" in record.getMessage()


@pytestmark_db
def test_a_schedule_read_again_between_two_ticks_does_not_send_a_task_twice(
    schedulers, probe, broker
):
    active = scheduler(schedulers)
    ticks(active)
    assert sent(broker) == 1

    # Another beat starting writes the schedule (its entries' definitions) while this one
    # sends; the heap is then rebuilt from the entries the scheduler holds.
    active.populate_heap()
    ticks(active)

    assert sent(broker) == 1


@pytestmark_db
def test_only_the_scheduler_that_takes_the_lease_writes_the_configured_entries(schedulers, broker):
    PeriodicTask.objects.all().delete()
    holder = Lease(broker, LEASE_KEY, 3.0)
    holder.acquire()
    standby = scheduler(schedulers)

    ticks(standby)
    assert standby.role == Role.STANDBY
    assert not PeriodicTask.objects.exists()

    holder.release()
    ticks(standby)

    assert standby.role == Role.ACTIVE
    assert set(app.conf.beat_schedule) <= set(PeriodicTask.objects.values_list("name", flat=True))
