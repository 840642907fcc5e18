"""The pipeline against real parts: a Celery worker killed mid-event, a broker that goes
away while events are accepted."""

import datetime as dt
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from config.celery import app as celery_app
from config.workqueue import wake
from events.conf import lease_seconds
from events.models import Event, EventStatus
from events.wake import events_wake_reset
from tests.events.conftest import drain

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def _wait_for(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


class Worker:
    def __init__(self, broker_url: str, marker: Path | None = None, **settings: str) -> None:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": _database_url(),
            "CELERY_BROKER_URL": broker_url,
            **settings,
        }
        if marker is not None:
            env["EVENTS_TEST_BLOCK_MARKER"] = str(marker)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.events.worker_harness"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(os.environ.get("EVENTS_TEST_WORKER_LOG", os.devnull), "a"),  # noqa: SIM115
        )

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)


@pytest.fixture
def workers() -> Iterator[Callable[..., Worker]]:
    started: list[Worker] = []

    def start(broker_url: str, marker: Path | None = None, **settings: str) -> Worker:
        worker = Worker(broker_url, marker, **settings)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()


def _point_celery_at(broker_url: str | None) -> None:
    """Makes this process publish to `broker_url` (None: the configured broker)."""
    celery_app.conf.broker_write_url = broker_url
    events_wake_reset()
    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture
def private_broker(tmp_path: Path) -> Iterator[dict[str, object]]:
    """A Redis server of this test's own, so the test can take it down and bring it back."""
    port = _free_port()
    state: dict[str, object] = {"url": f"redis://127.0.0.1:{port}/0", "process": None}

    def up() -> None:
        state["process"] = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(tmp_path),
            ],
            stdout=subprocess.DEVNULL,
        )
        _wait_for(lambda: _port_open(port), timeout=10)

    def down() -> None:
        process = state["process"]
        assert isinstance(process, subprocess.Popen)
        process.kill()
        process.wait(timeout=10)

    state["up"], state["down"] = up, down
    original = celery_app.conf.broker_write_url
    up()
    _point_celery_at(str(state["url"]))
    yield state
    _point_celery_at(original)
    process = state["process"]
    if isinstance(process, subprocess.Popen) and process.poll() is None:
        down()


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _status(event_id: str) -> str:
    return Event.objects.values_list("status", flat=True).get(id=event_id)


def test_an_event_claimed_by_a_worker_killed_mid_way_is_still_processed(
    api, world, tmp_path, workers, private_broker, clock
):
    clock.set(timezone.now())
    marker = tmp_path / "claimed"
    worker = workers(str(private_broker["url"]), marker)
    response = api.post(
        "/events",
        {"event": "order.completed", "email": "kill@example.com"},
        key=world.keys["project"],
    )
    assert response.status_code == 202
    event_id = response.json()["data"]["id"]

    # The real worker was woken, claimed the event and is inside its transaction.
    _wait_for(marker.exists)
    assert marker.read_text() == event_id
    assert _status(event_id) == EventStatus.PROCESSING
    worker.kill()

    # Nothing it did inside the event's transaction survived; the claim did.
    event = Event.objects.get(id=event_id)
    assert event.status == EventStatus.PROCESSING
    assert event.attempts == 1
    assert event.contact_id is None

    # Before the lease runs out nobody may take it over; after, the sweep does.
    assert drain() == 0
    clock.set(event.lease_expires_at + dt.timedelta(seconds=1))
    drain()
    event.refresh_from_db()
    assert event.status == EventStatus.PROCESSED
    assert event.attempts == 2
    assert event.contact is not None
    assert event.contact.email == "kill@example.com"
    assert lease_seconds() == 60


def test_an_event_accepted_while_the_broker_is_down_is_processed_when_it_returns(
    api, world, workers, private_broker
):
    private_broker["down"]()  # type: ignore[operator]

    started = time.monotonic()
    response = api.post(
        "/events",
        {"event": "order.completed", "email": "outage@example.com"},
        key=world.keys["project"],
    )
    assert response.status_code == 202
    assert time.monotonic() - started < 2, "a broker outage must not stall ingest"
    event_id = response.json()["data"]["id"]
    assert _status(event_id) == EventStatus.ACCEPTED

    private_broker["up"]()  # type: ignore[operator]
    workers(str(private_broker["url"]))
    # What beat sends every few seconds.
    celery_app.send_task("events.sweep")
    _wait_for(lambda: _status(event_id) == EventStatus.PROCESSED)


def test_an_event_whose_task_runs_past_its_soft_time_limit_is_handed_back_and_retried(
    api, world, tmp_path, workers, private_broker
):
    world.project.event_retry_base_seconds = 4.0
    world.project.save(update_fields=["event_retry_base_seconds"])
    response = api.post(
        "/events",
        {"event": "order.completed", "email": "slow@example.com"},
        key=world.keys["project"],
    )
    assert response.status_code == 202
    event_id = response.json()["data"]["id"]
    # A task message carries the time limits of the process that published it (this one's
    # are the events queue's settings): the ingest's wake-up is replaced by one that may
    # run 1 s, before any worker reads it.
    assert wake.flush()
    celery_app.control.purge()
    celery_app.send_task("events.process_batch", soft_time_limit=1, time_limit=30)
    # A prefork worker (the pool that enforces time limits), whose own tasks have the same
    # limits; the handler blocks the first attempt only.
    marker = tmp_path / "claimed"
    worker = workers(
        str(private_broker["url"]),
        marker,
        EVENTS_TEST_BLOCK_ONCE="1",
        EVENTS_TEST_WORKER_POOL="prefork",
        EVENTS_TASK_SOFT_TIME_LIMIT_SECONDS="1",
        EVENTS_TASK_TIME_LIMIT_SECONDS="30",
    )
    _wait_for(marker.exists)

    # The soft limit stopped the task; the kit recorded the claimed event as a failed
    # attempt due for a retry by the project's policy (2 to 4 s after attempt 1).
    _wait_for(lambda: _status(event_id) != EventStatus.PROCESSING, timeout=10)
    event = Event.objects.get(id=event_id)
    assert event.status == EventStatus.FAILED
    assert event.error_code == "time_limit"
    assert event.attempts == 1
    assert event.claim_token is None
    assert event.next_attempt_at is not None
    assert event.next_attempt_at > timezone.now()
    assert event.contact_id is None
    assert worker.process.poll() is None, "the hard limit must not have killed the worker"

    # The retry's wake-up reaches the same worker, whose second attempt goes through.
    _wait_for(lambda: _status(event_id) == EventStatus.PROCESSED, timeout=30)
    event.refresh_from_db()
    assert event.attempts == 2
    assert event.contact is not None
    assert event.contact.email == "slow@example.com"
