"""Campaign fan-out against PostgreSQL with real processes: a worker killed with SIGKILL
in the middle of a batch, and the rest of the fan-out taken over when its lease runs out,
without a second message to anyone."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from messaging.models import CampaignFanout, Email
from messaging.services.campaign_fanout import campaign_fanout_batch
from messaging.services.campaigns import campaign_approve
from messaging.services.delivery import emails_deliver_batch
from tests.conftest import Api
from tests.messaging.factories_campaigns import audience_with, email_template_id, reviewer
from tests.messaging.smtp_server import SmtpServer, smtp_server_for

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def test_a_worker_killed_mid_fan_out_is_taken_over_without_a_second_message(
    world, smtp, settings, tmp_path
):
    settings.CAMPAIGN_FANOUT_BATCH_SIZE = 10
    world.project.default_from = "Shop <shop@example.com>"
    world.project.save()
    api = Api()
    key = world.keys["project"]
    audience = audience_with(world.project, 30, first_name="Ada")
    template_id = email_template_id(api, world)
    created = api.post(
        "/campaigns",
        {"name": "Sale", "template_id": template_id, "audience_id": str(audience.id)},
        key=key,
    )
    campaign_id = created.json()["data"]["id"]
    api.post(f"/campaigns/{campaign_id}/actions/submit", {}, key=key)
    campaign_approve(campaign_id=campaign_id, user_id=reviewer().pk)
    assert api.post(f"/campaigns/{campaign_id}/actions/send", {}, key=key).status_code == 202
    assert CampaignFanout.objects.filter(campaign_id=campaign_id).count() == 4
    held = tmp_path / "holding"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _database_url(),
        "CAMPAIGN_FANOUT_LEASE_SECONDS": "1",
        "HOLD_AT_POSITION": "2",
        "HOLD_FILE": str(held),
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.messaging.campaign_worker_harness"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not held.exists():
            assert worker.poll() is None, "the worker exited before the third batch"
            assert time.monotonic() < deadline, "the worker never reached the third batch"
            time.sleep(0.05)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
    # Two batches committed; the third died with its transaction.
    emailed = list(Email.objects.filter(campaign_id=campaign_id).values_list("contact", flat=True))
    assert len(emailed) == len(set(emailed)) == 20

    time.sleep(1.2)  # the dead worker's lease runs out
    while campaign_fanout_batch():
        pass
    while emails_deliver_batch():
        pass

    assert Email.objects.filter(campaign_id=campaign_id).count() == 30
    received = Counter(r.envelope_to[0] for r in smtp.received)
    members = {m.contact.email for m in audience.memberships.select_related("contact")}
    assert set(received) == members
    assert set(received.values()) == {1}
    taken_over = CampaignFanout.objects.get(campaign_id=campaign_id, position=2)
    assert taken_over.attempts == 2
    assert taken_over.messages == 10
    assert api.get(f"/campaigns/{campaign_id}", key=key).json()["data"]["status"] == "sent"
