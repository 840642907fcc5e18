"""Delivery against a real SMTP server on loopback (aiosmtpd), and the local capture."""

from collections.abc import Iterator

import dkim
import pytest
from django.core import signing

from events.models import Event
from messaging.models import CapturedMessage, Email, EmailDelivery, EmailStatus, RecordPurpose
from messaging.services.assembly import html_to_text
from messaging.services.delivery import emails_deliver_batch
from messaging.services.tokens import unsubscribe_token, unsubscribe_token_read
from tests.messaging.factories_domains import DomainFactory, record_of
from tests.messaging.smtp_server import SmtpServer, smtp_server_for, use_capture

pytestmark = pytest.mark.django_db


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


@pytest.fixture
def capture(settings) -> None:
    use_capture(settings)


HTML = (
    "<html><head><style>p { color: red; }</style></head>"
    '<body><p>Hello Ada</p><a href="https://example.com/x">Open</a></body></html>'
)


def send(api, world, **overrides):
    body = {
        "from": "Team <team@example.com>",
        "to": "ada@example.net",
        "subject": "Hi",
        "html": HTML,
    }
    body.update(overrides)
    response = api.post("/emails", body, key=world.keys["project"])
    assert response.status_code == 201, response.content
    return Email.objects.get(pk=response.json()["data"]["id"])


def test_a_sent_message_carries_its_headers_and_both_parts(api, world, smtp, settings):
    settings.PUBLIC_BASE_URL = "https://mail.example.org"
    email = send(api, world)

    assert emails_deliver_batch() == 1

    assert len(smtp.received) == 1
    received = smtp.received[0]
    assert received.envelope_to == ["ada@example.net"]
    message = received.message
    assert message["Message-ID"] == email.message_id
    assert message["X-Email-Id"] == str(email.id)
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    link = str(message["List-Unsubscribe"]).strip()
    assert link.startswith("<https://mail.example.org/u/")
    token = unsubscribe_token_read(link[len("<https://mail.example.org/u/") : -1])
    assert token is not None
    assert token.email_id == email.id
    assert token.recipient == "ada@example.net"
    html = message.get_body(("html",)).get_content()
    text = message.get_body(("plain",)).get_content()
    assert 'style="color: red;"' in html
    assert "Hello Ada" in text
    assert "Open (https://example.com/x)" in text


def test_acceptance_marks_the_email_sent_and_records_the_send_event(api, world, smtp, clock):
    email = send(api, world)

    emails_deliver_batch()

    email.refresh_from_db()
    assert email.status == EmailStatus.SENT
    assert email.sent_at == clock()
    event = Event.objects.get(event="sendrealm.mail.send")
    assert event.payload == {"email_id": str(email.id), "contact_id": None, "template_id": None}
    assert EmailDelivery.objects.get(email=email).status == "processed"


def test_the_given_text_part_is_kept(api, world, smtp):
    send(api, world, text="Plain words")

    emails_deliver_batch()

    assert smtp.received[0].message.get_body(("plain",)).get_content().strip() == "Plain words"


def test_a_batch_goes_over_one_connection(api, world, smtp):
    for n in range(3):
        send(api, world, to=f"user{n}@example.net")

    assert emails_deliver_batch() == 3

    assert len(smtp.received) == 3
    assert Email.objects.filter(status=EmailStatus.SENT).count() == 3


def test_mail_from_a_verified_domain_is_dkim_signed(api, world, smtp):
    domain = DomainFactory(project=world.project, name="example.com", verified=True)
    send(api, world)

    emails_deliver_batch()

    raw = smtp.received[0].raw
    assert b"DKIM-Signature:" in raw
    dkim_value = record_of(domain, RecordPurpose.DKIM).value

    def dns_txt(name: bytes, timeout: int = 5) -> bytes:
        assert name.decode().rstrip(".") == f"{domain.dkim_selector}._domainkey.example.com"
        return dkim_value.encode()

    assert dkim.verify(raw, dnsfunc=dns_txt)


def test_mail_from_an_unverified_domain_goes_unsigned(api, world, smtp):
    DomainFactory(project=world.project, name="example.com")
    send(api, world)

    emails_deliver_batch()

    assert b"DKIM-Signature:" not in smtp.received[0].raw


def test_a_temporary_refusal_is_retried_and_sent_once(api, world, smtp, clock):
    smtp.handler.replies.append("451 4.3.0 Try again later")
    email = send(api, world)

    emails_deliver_batch()
    email.refresh_from_db()
    delivery = EmailDelivery.objects.get(email=email)
    assert email.status == EmailStatus.QUEUED
    assert "451" in email.last_error
    assert delivery.status == "failed"
    assert delivery.next_attempt_at > clock()
    assert emails_deliver_batch() == 0

    clock.advance(hours=1)
    assert emails_deliver_batch() == 1

    email.refresh_from_db()
    assert email.status == EmailStatus.SENT
    assert email.last_error is None
    assert len(smtp.received) == 1
    assert emails_deliver_batch() == 0


def test_a_permanent_refusal_fails_the_email(api, world, smtp):
    smtp.handler.replies.append("550 5.1.1 No such mailbox")
    email = send(api, world)

    emails_deliver_batch()

    email.refresh_from_db()
    assert email.status == EmailStatus.FAILED
    assert "550" in email.last_error
    assert EmailDelivery.objects.get(email=email).status == "dead_lettered"
    assert smtp.received == []
    assert not Event.objects.filter(event="sendrealm.mail.send").exists()


def test_a_refused_recipient_fails_the_email(api, world, smtp):
    smtp.handler.refused_recipients["ada@example.net"] = "550 5.1.1 Unknown user"
    email = send(api, world)

    emails_deliver_batch()

    email.refresh_from_db()
    assert email.status == EmailStatus.FAILED
    assert "ada@example.net" in email.last_error


def test_an_unreachable_server_retries_the_whole_batch(api, world, smtp, settings, clock):
    first, second = send(api, world), send(api, world, to="bob@example.net")
    smtp.stop()

    assert emails_deliver_batch() == 2

    for email in (first, second):
        email.refresh_from_db()
        assert email.status == EmailStatus.QUEUED
        assert EmailDelivery.objects.get(email=email).status == "failed"


def test_retries_end_in_a_failed_email(api, world, smtp, settings, clock):
    settings.EMAIL_RETRY_MAX_ATTEMPTS = 2
    smtp.handler.replies.extend(["451 busy", "451 busy"])
    email = send(api, world)

    emails_deliver_batch()
    clock.advance(hours=2)
    emails_deliver_batch()

    email.refresh_from_db()
    assert email.status == EmailStatus.FAILED
    assert "451" in email.last_error


def test_without_a_transport_messages_are_captured(api, world, capture):
    email = send(api, world, to=["ada@example.net", "Bob <bob@example.net>"])

    emails_deliver_batch()

    captured = CapturedMessage.objects.get()
    assert captured.email_id == email.id
    assert captured.envelope_to == ["ada@example.net", "bob@example.net"]
    assert captured.message_id == email.message_id
    assert captured.subject == "Hi"
    assert ["X-Email-Id", str(email.id)] in captured.headers
    assert bytes(captured.raw).startswith(b"Content-Type")
    email.refresh_from_db()
    assert email.status == EmailStatus.SENT


def test_a_tampered_unsubscribe_token_reads_as_nothing():
    token = unsubscribe_token("7b3c1c4e-5a47-4b43-9d7a-0f0b8f6b6a51", "ada@example.net")

    assert unsubscribe_token_read(token) is not None
    assert unsubscribe_token_read(token[:-2] + "xx") is None
    assert unsubscribe_token_read(signing.dumps({"e": "x"}, salt="other")) is None


def test_the_text_part_of_html_keeps_words_and_links():
    text = html_to_text("<style>p{}</style><h1>Title</h1><p>One <b>two</b></p><a href='u'>go</a>")

    assert text == "Title\n\nOne two\n\ngo (u)\n"
