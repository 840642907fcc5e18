"""What one server process sees of a change another made, each bound of docs/ARCHITECTURE.md
("What each process keeps") checked across two real processes: this one, and a second
Django process on the same test database with caches of its own (tests/config/
peer_harness.py). Key records, projects (policies) and plan terms: within
LOCAL_CACHE_SECONDS (the peer runs with 1 s). Trigger maps and the waits lookup: exact,
at the next batch."""

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection

from automations.models import RunWait, WaitStatus
from automations.services.advance import runs_advance_batch
from events.services.processing import events_process_batch
from tenancy.models import KeyKind, Meter, Plan
from tenancy.services import api_key_create, api_key_revoke, team_plan_set
from tests.automations.api_driver import action, automation, event, runs
from tests.factories import PlanFactory
from tests.processes import ROOT

pytestmark = pytest.mark.django_db(transaction=True)

PEER_CACHE_SECONDS = 1.0
# What a request to the peer and this process's own steps may add to a bound on a loaded
# machine; the peer is asked again every 50 ms.
SLACK_SECONDS = 3.0


class Peer:
    """The second process: one JSON command a line in, one answer a line out."""

    def __init__(self) -> None:
        s = connection.settings_dict
        url = f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": url,
            "LOCAL_CACHE_SECONDS": str(PEER_CACHE_SECONDS),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.config.peer_harness"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._read(timeout=60) == {"ready": True}

    def _read(self, *, timeout: float) -> Any:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        assert ready, "the peer did not answer"
        line = self.process.stdout.readline()
        assert line, "the peer exited"
        return json.loads(line)

    def ask(self, **command: Any) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        answer = self._read(timeout=30)
        assert "error" not in answer, answer["error"]
        return answer

    def until(
        self, command: dict[str, Any], wanted: Callable[[Any], bool], *, within: float
    ) -> float:
        """Asks until `wanted(answer)`; the seconds it took (fails past `within`)."""
        started = time.monotonic()
        while not wanted(answer := self.ask(**command)):
            elapsed = time.monotonic() - started
            assert elapsed < within, f"still {answer} after {elapsed:.2f}s"
            time.sleep(0.05)
        return time.monotonic() - started

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def peer(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Peer]:
    with django_db_blocker.unblock():
        started = Peer()
    yield started
    started.stop()


@pytest.fixture
def key(world) -> str:
    return str(world.keys["project"])


def test_a_key_revoked_here_is_refused_by_the_other_process_within_the_bound(api, world, peer):
    api_key, secret = api_key_create(
        team=world.team, kind=KeyKind.PROJECT, name="to revoke", project=world.project
    )
    request = {"op": "get", "path": "/project", "key": secret}
    assert peer.ask(**request)["status"] == 200  # the peer now keeps the key record

    api_key_revoke(api_key=api_key)
    assert api.get("/project", key=secret).status_code == 401  # here: at once
    took = peer.until(
        request, lambda answer: answer["status"] == 401, within=PEER_CACHE_SECONDS + SLACK_SECONDS
    )
    assert took <= PEER_CACHE_SECONDS + SLACK_SECONDS


def test_a_policy_changed_here_is_seen_by_the_other_process_within_the_bound(api, key, peer):
    request = {"op": "get", "path": "/project", "key": key}

    def limit(answer: Any) -> int:
        return int(answer["body"]["data"]["policies"]["event_payload_limit_bytes"])

    assert limit(peer.ask(**request)) == 65536  # the peer now keeps the project
    changed = api.patch("/project", {"policies": {"event_payload_limit_bytes": 1024}}, key=key)
    assert changed.status_code == 200, changed.json()
    assert peer.until(
        request, lambda answer: limit(answer) == 1024, within=PEER_CACHE_SECONDS + SLACK_SECONDS
    )


def quotas(plan: Plan | None) -> dict[str, int | None]:
    return {meter: plan.quota(meter) if plan else None for meter in Meter.values}


def test_a_plan_change_here_is_seen_by_the_other_process_within_the_bound(world, peer):
    small = PlanFactory(events_ingested_per_month=100, api_rate_limit=50)
    large = PlanFactory(events_ingested_per_month=10_000, api_rate_limit=500)
    team_plan_set(team=world.team, plan=small)
    command = {"op": "plan", "team_id": str(world.team.id)}
    assert peer.ask(**command)["quotas"] == quotas(small)

    team_plan_set(team=world.team, plan=large)
    wanted = {"name": large.name, "quotas": quotas(large), "rate_limit": 500}
    assert peer.until(command, wanted.__eq__, within=PEER_CACHE_SECONDS + SLACK_SECONDS)

    # A change made around the service (SQL, no cache told) is held to the same bound.
    Plan.objects.filter(id=large.id).update(events_ingested_per_month=7)
    large.refresh_from_db()
    wanted = {"name": large.name, "quotas": quotas(large), "rate_limit": 500}
    assert peer.until(command, wanted.__eq__, within=PEER_CACHE_SECONDS + SLACK_SECONDS)


EXIT_ON_SIGNUP = {
    "trigger": {"event": "signup"},
    "start": "done",
    "steps": [{"key": "done", "type": "exit", "next": None}],
}


def test_a_publish_and_a_pause_here_apply_at_once_to_events_the_other_process_handles(
    api, key, peer
):
    event(api, key, "signup")
    assert peer.ask(op="process")["claimed"] >= 1  # its map: no automation yet

    automation_id = automation(api, key, EXIT_ON_SIGNUP)
    event(api, key, "signup")
    assert peer.ask(op="process")["claimed"] >= 1
    assert len(runs(api, key, automation_id)) == 1

    action(api, key, automation_id, "pause")
    event(api, key, "signup")
    assert peer.ask(op="process")["claimed"] >= 1
    assert len(runs(api, key, automation_id)) == 1

    action(api, key, automation_id, "resume")
    event(api, key, "signup")
    assert peer.ask(op="process")["claimed"] >= 1
    assert len(runs(api, key, automation_id)) == 2


AWAIT_REPLY = {
    "trigger": {"event": "ticket.opened"},
    "start": "await_reply",
    "steps": [
        {
            "key": "await_reply",
            "type": "wait_for_event",
            "event": "reply",
            "timeout": "PT1H",
            "next": None,
        }
    ],
}


def test_a_wait_is_matched_by_an_event_the_other_process_handles(api, key, peer):
    event(api, key, "reply")
    assert peer.ask(op="process")["claimed"] >= 1  # its map: nobody waits for `reply`

    automation(api, key, AWAIT_REPLY)
    event(api, key, "ticket.opened")
    while events_process_batch().claimed:
        pass
    assert runs_advance_batch().claimed == 1
    assert RunWait.objects.get().status == WaitStatus.WAITING

    event(api, key, "reply")
    assert peer.ask(op="process")["claimed"] >= 1
    assert RunWait.objects.get().status == WaitStatus.MATCHED
