"""Push delivery when PostgreSQL refuses the COMMIT that records accepted notifications
(`WorkQueue.complete`): the deliveries are due again after the backoff at once, still
`queued` with the reason shown, and sent again by the retry; out of attempts, the
delivery is `failed` and its message rolls up, as for any last failed attempt."""

from collections.abc import Iterator

import pytest

from bench import keys
from bench.standins import FcmStandin
from config.workqueue.models import WorkStatus
from pushproviders.models import PushDelivery
from pushproviders.services.delivery import push_deliver_batch
from tests.config.commit_refusal import SERIALIZATION_FAILURE, commit_refusal
from tests.pushproviders.sending import PushWorld, push_world
from tests.pushproviders.test_push_delivery import FCM_TOKEN, events, read, send

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fcm() -> Iterator[FcmStandin]:
    with FcmStandin(account=keys.service_account()) as server:
        yield server


@pytest.fixture
def push(api, world, settings, fcm, clock) -> PushWorld:
    settings.PUSH_ALLOW_HTTP = True
    settings.PUSH_FCM_BASE_URL = fcm.url
    push = push_world(api, world)
    push.fcm(keys.service_account(token_uri=fcm.token_uri))
    return push


def test_a_notification_whose_record_is_refused_is_retried_at_once_and_sent_again(push, fcm, clock):
    ada = push.contact(first_name="Ada")
    push.install(ada, "fcm", FCM_TOKEN)
    message_id = send(push, contact_id=str(ada.id))
    delivery = PushDelivery.objects.get(message_id=message_id)

    with commit_refusal("pushproviders_pushdelivery") as refusal:
        refusal.refuse([delivery.pk], error=SERIALIZATION_FAILURE)
        assert push_deliver_batch() == 1

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.error_code) == (
        WorkStatus.FAILED,
        1,
        "commit_failed",
    )
    # The push retry's first backoff: 10 s, half of it random; the lease is 120 s.
    assert 5 <= (delivery.next_attempt_at - clock()).total_seconds() <= 10
    [shown] = read(push, message_id)["deliveries"]
    assert (shown["status"], shown["error"]) == ("queued", "Recording the outcome failed.")
    assert read(push, message_id)["status"] == "queued"
    assert events("push.send") == []

    clock.advance(seconds=10)
    assert push_deliver_batch() == 1

    message = read(push, message_id)
    assert message["status"] == "sent"
    assert (message["deliveries"][0]["status"], message["deliveries"][0]["error"]) == (
        "sent",
        None,
    )
    assert len(events("push.send")) == 1
    assert len(fcm.messages) == 2, "the send whose record was lost goes out again"


def test_a_notification_whose_last_record_is_refused_fails_and_its_message_rolls_up(
    push, fcm, settings
):
    settings.PUSH_RETRY_MAX_ATTEMPTS = 1
    ada = push.contact(first_name="Ada")
    push.install(ada, "fcm", FCM_TOKEN)
    message_id = send(push, contact_id=str(ada.id))
    delivery = PushDelivery.objects.get(message_id=message_id)

    with commit_refusal("pushproviders_pushdelivery") as refusal:
        refusal.refuse([delivery.pk])
        assert push_deliver_batch() == 1

    delivery.refresh_from_db()
    assert (delivery.status, delivery.error_code) == (WorkStatus.DEAD_LETTERED, "commit_failed")
    message = read(push, message_id)
    assert message["status"] == "failed"
    assert message["deliveries"][0]["status"] == "failed"
    assert [event.payload["status"] for event in events("push.failure")] == ["failed"]
    assert events("push.send") == []
