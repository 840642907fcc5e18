"""Sends under concurrency against PostgreSQL: idempotency races between threads, and a
delivery worker process killed mid-batch."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from events.models import Event
from messaging.models import Email, EmailDelivery, EmailStatus
from messaging.services.delivery import emails_deliver_batch
from tests.conftest import Api
from tests.contacts.test_contacts_races import run_in_threads
from tests.messaging.smtp_server import SmtpServer, smtp_server_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


ROOT = Path(__file__).resolve().parents[2]
BODY = {"from": "a@example.com", "to": "ada@example.net", "subject": "Hi", "text": "Hello"}


def test_concurrent_requests_with_one_key_make_one_email(world):
    key = world.keys["project"]
    Api().get("/emails", key=key)  # caches the key

    def send(index: int) -> tuple[int, str]:
        response = Api().post("/emails", BODY, key=key, headers={"Idempotency-Key": "k-1"})
        return response.status_code, response.json()["data"]["id"]

    results = run_in_threads(12, send)

    assert sorted(status for status, _ in results) == [200] * 11 + [201]
    assert len({email_id for _, email_id in results}) == 1
    assert Email.objects.count() == 1
    assert EmailDelivery.objects.count() == 1


def test_concurrent_requests_with_one_key_and_other_bodies_conflict(world):
    key = world.keys["project"]
    Api().get("/emails", key=key)

    def send(index: int) -> int:
        body = {**BODY, "subject": f"Hi {index % 2}"}
        return Api().post("/emails", body, key=key, headers={"Idempotency-Key": "k-2"}).status_code

    statuses = run_in_threads(10, send)

    assert statuses.count(201) == 1
    assert set(statuses) <= {200, 201, 409}
    assert statuses.count(409) >= 4
    assert Email.objects.count() == 1


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def test_a_worker_killed_mid_batch_sends_no_message_twice_and_loses_none(world, smtp, settings):
    settings.EMAIL_LEASE_SECONDS = 1
    key = world.keys["project"]
    ids = [
        Api().post("/emails", {**BODY, "to": f"u{n}@example.net"}, key=key).json()["data"]["id"]
        for n in range(5)
    ]
    smtp.handler.hold_after = 2
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _database_url(),
        "EMAIL_URL": smtp.url,
        "EMAIL_LEASE_SECONDS": "1",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.messaging.email_worker_harness"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert smtp.handler.holding.wait(timeout=30), "the worker never reached the third message"
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
    smtp.handler.hold_after = None
    smtp.handler.release.set()
    assert Email.objects.filter(status=EmailStatus.SENT).count() == 2

    time.sleep(1.2)  # the dead worker's lease runs out
    # The next claim takes all five rows: the two sent ones only to be recorded.
    assert emails_deliver_batch() == 5

    received = sorted(r.message["X-Email-Id"] for r in smtp.received)
    assert received == sorted(ids)
    assert Email.objects.filter(status=EmailStatus.SENT).count() == 5
    announced = Event.objects.filter(event="sendrealm.mail.send")
    assert sorted(event.payload["email_id"] for event in announced) == sorted(ids)
