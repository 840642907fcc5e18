"""Two real `celery -A config beat` processes on the test database and broker, with a 2 s
lease and a probe task every second to a queue nothing consumes: each message in the
broker says which process published it (`origin`) and when (`expires`, a fixed time after
the send). Only one publishes; once it is killed (-9) the other takes over within the
lease and a tick, no probe is ever sent twice, and a clean stop gives the lease up."""

import datetime as dt
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from django.db import connection
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from config.beat import LEASE_KEY
from config.celery import Queues, app
from config.runtime.redisclient import broker_redis_client
from tests.processes import spawn_logged, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

LEASE_SECONDS = 2.0
PROBE = "beat-probe"
PROBE_QUEUE = "beatprobe"
PROBE_EXPIRES = 600
# What a loaded machine may add to a take-over (the survivor's database read and publish).
SLACK_SECONDS = 2.0


@dataclass(frozen=True)
class Probe:
    sent_at: float
    pid: int


def probes(broker: redis.Redis) -> list[Probe]:
    """The probes in the broker, oldest first."""
    found = []
    for raw in broker.lrange(PROBE_QUEUE, 0, -1):
        headers = json.loads(raw)["headers"]
        expires = dt.datetime.fromisoformat(headers["expires"]).timestamp()
        origin = headers["origin"]  # gen<pid>@<host>
        found.append(Probe(expires - PROBE_EXPIRES, int(origin.split("@")[0][len("gen") :])))
    return sorted(found, key=lambda probe: probe.sent_at)


class Beat:
    def __init__(self, name: str, env: dict[str, str], logdir: Path) -> None:
        self.log = logdir / f"{name}.log"
        self.popen = spawn_logged(
            [str(Path(sys.executable).parent / "celery"), "-A", "config", "beat", "-l", "info"],
            env,
            self.log,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def logged(self, text: str) -> bool:
        return text in self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)


@pytest.fixture
def broker() -> Iterator[redis.Redis]:
    client = broker_redis_client()
    queues = [PROBE_QUEUE, *(queue.name for queue in app.conf.task_queues)]
    client.delete(LEASE_KEY, *queues)
    yield client
    client.delete(LEASE_KEY, *queues)


@pytest.fixture
def beats(tmp_path: Path) -> Iterator[list[Beat]]:
    s = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}",
        "BEAT_LEASE_SECONDS": str(LEASE_SECONDS),
        "PYTHONUNBUFFERED": "1",
    }
    started = [Beat(name, env, tmp_path) for name in ("beat1", "beat2")]
    yield started
    for beat in started:
        beat.stop()


def test_of_two_beat_processes_one_sends_and_the_other_takes_over_when_it_is_killed(broker, beats):
    every, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(
        name=PROBE,
        task="beat.probe",
        interval=every,
        queue=PROBE_QUEUE,
        expire_seconds=PROBE_EXPIRES,
    )
    assert Queues.DEFAULT  # the queues the schedule also sends to are emptied afterwards

    # Both up: one active, the other standing by.
    wait_for(
        lambda: all(beat.logged("config.beat beat: ") for beat in beats),
        timeout=60,
        what="both beat processes to ask for the lease",
    )
    wait_for(lambda: len(probes(broker)) >= 3, timeout=20, what="three probes")
    before = probes(broker)
    active_pid = before[0].pid
    assert {probe.pid for probe in before} == {active_pid}
    active = next(beat for beat in beats if beat.pid == active_pid)
    survivor = next(beat for beat in beats if beat.pid != active_pid)
    assert active.logged("beat: active, scheduling periodic tasks")
    assert survivor.logged("beat: standing by: another process holds the beat lease")
    assert not survivor.logged("beat: active")

    os.kill(active.pid, signal.SIGKILL)
    killed_at = time.time()
    active.popen.wait(timeout=10)

    def survivors() -> list[Probe]:
        return [probe for probe in probes(broker) if probe.pid == survivor.pid]

    wait_for(lambda: len(survivors()) >= 3, timeout=20, what="three probes from the survivor")
    taken_over = survivors()[0].sent_at - killed_at
    assert taken_over <= LEASE_SECONDS + LEASE_SECONDS / 3 + SLACK_SECONDS
    assert survivor.logged("beat: active, scheduling periodic tasks")

    sent = probes(broker)
    assert {probe.pid for probe in sent} == {active.pid, survivor.pid}
    assert all(probe.sent_at <= killed_at for probe in sent if probe.pid == active.pid)
    # Never twice, across the hand-over too: no two probes close together, and no more of
    # them than seconds they span (each is due a second after the last one's run was
    # recorded, and published a moment after).
    gaps = [later.sent_at - earlier.sent_at for earlier, later in itertools.pairwise(sent)]
    assert min(gaps) >= 0.5, gaps
    assert len(sent) <= sent[-1].sent_at - sent[0].sent_at + 1.5, gaps

    # A clean stop gives the lease up for the next beat to take at once.
    survivor.stop()
    assert survivor.popen.returncode == 0
    assert broker.get(LEASE_KEY) is None
    assert survivor.logged("beat: stopped, beat lease released")
