"""Push sending under concurrency against PostgreSQL: idempotency races between requests,
and workers racing over one queue against the FCM stand-in."""

from collections.abc import Iterator

import pytest

from bench import keys
from bench.standins import FcmStandin
from events.models import Event
from pushproviders.models import PushDelivery, PushMessage
from pushproviders.services.delivery import push_deliver_due
from tests.conftest import Api
from tests.contacts.test_contacts_races import run_in_threads
from tests.pushproviders.sending import push_world

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fcm() -> Iterator[FcmStandin]:
    with FcmStandin(account=keys.service_account()) as server:
        yield server


@pytest.fixture
def push(world, settings, fcm):
    settings.PUSH_ALLOW_HTTP = True
    settings.PUSH_FCM_BASE_URL = fcm.url
    push = push_world(Api(), world)
    push.fcm(keys.service_account(token_uri=fcm.token_uri))
    return push


def test_concurrent_sends_with_one_key_make_one_message(push):
    ada = push.contact()
    push.install(ada, "fcm", "fcm-device-token-0001")
    body = {"app_id": str(push.app.id), "contact_id": str(ada.id), "body": "Hello"}

    def send(index: int) -> tuple[int, str]:
        response = Api().post("/push/send", body, key=push.key, headers={"Idempotency-Key": "k-1"})
        return response.status_code, response.json()["data"]["id"]

    results = run_in_threads(8, send)

    assert sorted(status for status, _ in results) == [200] * 7 + [202]
    assert len({push_id for _, push_id in results}) == 1
    assert PushMessage.objects.count() == 1
    assert PushDelivery.objects.count() == 1


def test_workers_racing_over_one_queue_send_each_notification_once(push, fcm, settings):
    settings.PUSH_CLAIM_BATCH_SIZE = 3
    settings.PUSH_RECORD_EVERY = 2
    settings.PUSH_WAKE_SETTLE_SECONDS = 0
    for n in range(8):
        contact = push.contact()
        # Two devices each, so one message's deliveries are often claimed by both workers.
        push.install(contact, "fcm", f"fcm-device-token-{n:04d}-a")
        push.install(contact, "fcm", f"fcm-device-token-{n:04d}-b")
        assert push.send({"contact_id": str(contact.id), "body": f"note {n}"}).status_code == 202

    claimed = run_in_threads(3, lambda index: push_deliver_due(budget_seconds=30)[0])

    assert sum(claimed) == 16
    assert sorted(message["token"] for message in fcm.messages) == sorted(
        PushDelivery.objects.values_list("installation__token", flat=True)
    )
    assert set(PushDelivery.objects.values_list("state", flat=True)) == {"sent"}
    assert set(PushMessage.objects.values_list("status", flat=True)) == {"sent"}
    assert Event.objects.filter(event="sendrealm.push.send").count() == 16
