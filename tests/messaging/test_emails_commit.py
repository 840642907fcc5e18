"""Email delivery when PostgreSQL refuses the COMMIT that records a batch's outcomes: the
deliveries are due again after the backoff at once (not after their lease), and the email
stays what the outcome the batch could not record makes it: sent and announced once when
the server took it, still queued (and sent by the retry) after a transient refusal,
failed after a permanent one."""

import datetime as dt
from collections.abc import Iterator

import pytest

from config.workqueue.models import WorkStatus
from events.models import Event
from messaging.models import Email, EmailDelivery, EmailStatus
from messaging.services.delivery import emails_deliver_batch
from tests.config.commit_refusal import SERIALIZATION_FAILURE, TERMINATE, commit_refusal
from tests.messaging.smtp_server import SmtpServer, smtp_server_for
from tests.messaging.test_emails_delivery import send

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


def delivery_of(email: Email) -> EmailDelivery:
    return EmailDelivery.objects.get(email=email)


def within_the_first_backoff(delivery: EmailDelivery, now: dt.datetime) -> bool:
    # The emails' first backoff: 10 s, half of it random; their lease is 120 s.
    return (
        now + dt.timedelta(seconds=5) <= delivery.next_attempt_at <= now + dt.timedelta(seconds=10)
    )


@pytest.mark.parametrize("error", [SERIALIZATION_FAILURE, TERMINATE])
def test_a_sent_email_whose_record_is_refused_is_recorded_by_the_retry_and_not_sent_again(
    api, world, smtp, clock, error
):
    email = send(api, world)

    with commit_refusal("messaging_emaildelivery", key="email_id") as refusal:
        refusal.refuse([email.pk], error=error)
        assert emails_deliver_batch() == 1

        email.refresh_from_db()
        delivery = delivery_of(email)
        assert (email.status, email.sent_at) == (EmailStatus.SENT, clock())
        assert (delivery.status, delivery.attempts, delivery.error_code) == (
            WorkStatus.FAILED,
            1,
            "commit_failed",
        )
        assert delivery.claim_token is None
        assert within_the_first_backoff(delivery, clock())
        assert not Event.objects.filter(event="sendrealm.mail.send").exists()
        assert emails_deliver_batch() == 0

        refusal.allow()
        clock.advance(seconds=10)
        assert emails_deliver_batch() == 1

    assert len(smtp.received) == 1
    email.refresh_from_db()
    assert email.status == EmailStatus.SENT
    assert delivery_of(email).status == WorkStatus.PROCESSED
    assert Event.objects.filter(event="sendrealm.mail.send").count() == 1


def test_a_transient_refusal_whose_record_is_refused_leaves_the_email_queued_and_sendable(
    api, world, smtp, clock
):
    smtp.handler.replies.append("451 4.3.0 Try again later")
    email = send(api, world)

    with commit_refusal("messaging_emaildelivery", key="email_id") as refusal:
        # The batch that records the failure is refused once; the hand-back then holds.
        refusal.refuse([email.pk], statuses=["failed"], times=1)
        assert emails_deliver_batch() == 1

    email.refresh_from_db()
    delivery = delivery_of(email)
    assert email.status == EmailStatus.QUEUED
    assert "451" in email.last_error
    assert (delivery.status, delivery.attempts, delivery.error_code) == (
        WorkStatus.FAILED,
        1,
        "smtp_451",
    )
    assert within_the_first_backoff(delivery, clock())

    clock.advance(seconds=10)
    assert emails_deliver_batch() == 1
    email.refresh_from_db()
    assert (email.status, email.last_error) == (EmailStatus.SENT, None)
    assert len(smtp.received) == 1


def test_a_permanent_refusal_whose_record_is_refused_still_fails_the_email(api, world, smtp):
    smtp.handler.replies.append("550 5.1.1 No such mailbox")
    email = send(api, world)

    with commit_refusal("messaging_emaildelivery", key="email_id") as refusal:
        refusal.refuse([email.pk], statuses=["dead_lettered"], times=1)
        assert emails_deliver_batch() == 1

    email.refresh_from_db()
    delivery = delivery_of(email)
    assert email.status == EmailStatus.FAILED
    assert "550" in email.last_error
    assert (delivery.status, delivery.error_code) == (WorkStatus.DEAD_LETTERED, "smtp_550")
    assert smtp.received == []


def test_a_delivery_whose_records_keep_being_refused_dead_letters_with_its_email_sent(
    api, world, smtp, clock, settings
):
    """The server took the message; the record of it never committed. The delivery ends in
    the dead-letter queue after its attempts, the email stays `sent` and is not sent again."""
    settings.EMAIL_RETRY_MAX_ATTEMPTS = 2
    email = send(api, world)

    with commit_refusal("messaging_emaildelivery", key="email_id") as refusal:
        refusal.refuse([email.pk])
        emails_deliver_batch()
        clock.set(delivery_of(email).next_attempt_at)
        emails_deliver_batch()

    delivery = delivery_of(email)
    assert (delivery.status, delivery.attempts, delivery.error_code) == (
        WorkStatus.DEAD_LETTERED,
        2,
        "commit_failed",
    )
    email.refresh_from_db()
    assert email.status == EmailStatus.SENT
    assert len(smtp.received) == 1
