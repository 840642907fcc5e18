"""ESP tracking webhooks (`/webhooks/email/<esp>`): real ESP payloads through django-anymail's
views, with the ESP's own authentication (basic auth, HMAC and ECDSA signatures)."""

import base64
import datetime as dt
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.test import Client

from events.models import Event
from messaging.models import Email, EmailStatus, EspEventReceipt, Suppression
from messaging.services.delivery import emails_deliver_batch
from messaging.services.esp_events import esp_event_receipts_purge
from messaging.tasks import purge_esp_receipts
from tests.contacts.factories import ContactFactory
from tests.messaging.esp_server import PostmarkStandIn, postmark_stand_in
from tests.messaging.factories_emails import EmailFactory
from tests.messaging.factories_suppressions import SuppressionFactory

pytestmark = pytest.mark.django_db

SECRET = "postmark:s3cret-webhook-pass"
MAILGUN_KEY = "key-0123456789abcdef"
SENT_AT = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


def basic_auth(credentials: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(credentials.encode()).decode()}


def snapshot() -> dict[str, Any]:
    """What a webhook may change: emails, suppressions and events."""
    return {
        "emails": list(Email.objects.order_by("pk").values()),
        "suppressions": list(Suppression.objects.order_by("pk").values()),
        "events": list(Event.objects.order_by("pk").values("event", "payload")),
    }


def system_events(name: str) -> list[Event]:
    return list(Event.objects.filter(event=f"sendrealm.{name}").order_by("created_at"))


def sent_email(world: Any, *, provider_message_id: str, to: str = "ada@example.net") -> Email:
    """An email as delivery leaves it after the ESP accepted it."""
    return EmailFactory(
        project=world.project,
        contact=ContactFactory(project=world.project, email=to),
        to=[to],
        status=EmailStatus.SENT,
        sent_at=SENT_AT,
        provider_message_id=provider_message_id,
    )


# --- Postmark: basic auth (WEBHOOK_SECRET), sending through a stand-in of its API ---------


@pytest.fixture
def postmark(settings: Any) -> Iterator[PostmarkStandIn]:
    yield from postmark_stand_in(settings, webhook_secret=SECRET)


def postmark_post(client: Any, body: dict[str, Any], *, credentials: str | None = SECRET) -> Any:
    headers = basic_auth(credentials) if credentials else {}
    return client.post(
        "/webhooks/email/postmark", json.dumps(body), content_type="application/json", **headers
    )


def delivered_through_postmark(api: Any, world: Any, postmark: PostmarkStandIn) -> Email:
    contact = ContactFactory(project=world.project, email="ada@example.net")
    response = api.post(
        "/emails",
        {
            "from": "Team <team@example.com>",
            "to": "ada@example.net",
            "subject": "Hi",
            "text": "Hello",
            "contact_id": str(contact.pk),
        },
        key=world.keys["project"],
    )
    assert response.status_code == 201, response.content
    assert emails_deliver_batch() == 1
    email = Email.objects.get(pk=response.json()["data"]["id"])
    assert email.status == EmailStatus.SENT
    assert email.provider_message_id == postmark.sent[0]["message_id"]
    return email


def postmark_delivery(message_id: str) -> dict[str, Any]:
    return {
        "RecordType": "Delivery",
        "ServerID": 23,
        "MessageStream": "outbound",
        "MessageID": message_id,
        "Recipient": "ada@example.net",
        "Tag": "",
        "DeliveredAt": "2026-01-01T12:05:00Z",
        "Details": "smtp;250 2.0.0 OK",
        "Metadata": {},
    }


def postmark_bounce(message_id: str, *, kind: str = "HardBounce") -> dict[str, Any]:
    return {
        "RecordType": "Bounce",
        "ID": 4323372036854775807,
        "Type": kind,
        "TypeCode": 1 if kind == "HardBounce" else 4096,
        "Name": "Hard bounce",
        "Tag": "",
        "MessageID": message_id,
        "Metadata": {},
        "ServerID": 23,
        "MessageStream": "outbound",
        "Description": "The server was unable to deliver your message (ex: unknown user).",
        "Details": "smtp;550 5.1.1 The email account that you tried to reach does not exist.",
        "Email": "ada@example.net",
        "From": "team@example.com",
        "BouncedAt": "2026-01-01T12:06:00Z",
        "DumpAvailable": True,
        "Inactive": True,
        "CanActivate": True,
        "Subject": "Hi",
    }


def postmark_complaint(message_id: str) -> dict[str, Any]:
    return {
        **postmark_bounce(message_id),
        "Type": "SpamComplaint",
        "TypeCode": 512,
        "RecordType": "SpamComplaint",
        "Name": "Spam complaint",
        "BouncedAt": "2026-01-01T12:07:00Z",
    }


def test_a_postmark_delivery_marks_the_sent_email_delivered_and_records_the_event(
    api, world, postmark, client
):
    email = delivered_through_postmark(api, world, postmark)

    response = postmark_post(client, postmark_delivery(email.provider_message_id))

    assert response.status_code == 200
    assert response.json() == {"status": 200, "data": None}
    email.refresh_from_db()
    assert email.status == EmailStatus.DELIVERED
    assert email.delivered_at == dt.datetime(2026, 1, 1, 12, 5, tzinfo=dt.UTC)
    [event] = system_events("mail.delivery")
    assert event.payload == {
        "email_id": str(email.pk),
        "contact_id": str(email.contact_id),
        "template_id": None,
    }
    assert event.contact_id == email.contact_id
    assert event.project_id == world.project.pk


def test_the_same_postmark_delivery_twice_changes_and_records_nothing_the_second_time(
    api, world, postmark, client
):
    email = delivered_through_postmark(api, world, postmark)
    body = postmark_delivery(email.provider_message_id)
    assert postmark_post(client, body).status_code == 200
    before = snapshot()

    again = postmark_post(client, {**body, "DeliveredAt": "2026-01-01T12:09:00Z"})

    assert again.status_code == 200
    assert snapshot() == before
    assert len(system_events("mail.delivery")) == 1


def test_a_postmark_hard_bounce_bounces_the_email_and_suppresses_the_address(
    api, world, postmark, client
):
    email = delivered_through_postmark(api, world, postmark)

    response = postmark_post(client, postmark_bounce(email.provider_message_id))

    assert response.status_code == 200
    email.refresh_from_db()
    assert email.status == EmailStatus.BOUNCED
    assert email.bounced_at == dt.datetime(2026, 1, 1, 12, 6, tzinfo=dt.UTC)
    suppression = Suppression.objects.get(project=world.project)
    assert (suppression.email, suppression.reason) == ("ada@example.net", "bounce")
    [event] = system_events("mail.bounce")
    assert event.payload["email_id"] == str(email.pk)
    assert event.payload["contact_id"] == str(email.contact_id)
    # The next email to the address is suppressed, not sent.
    again = api.post(
        "/emails",
        {"from": "team@example.com", "to": "ada@example.net", "subject": "Hi", "text": "Hi"},
        key=world.keys["project"],
    )
    assert again.json()["data"]["status"] == "suppressed"


def test_a_bounce_after_the_delivery_still_bounces_the_email(api, world, postmark, client):
    email = delivered_through_postmark(api, world, postmark)
    postmark_post(client, postmark_delivery(email.provider_message_id))

    postmark_post(client, postmark_bounce(email.provider_message_id))

    email.refresh_from_db()
    assert email.status == EmailStatus.BOUNCED
    assert email.delivered_at is not None
    assert len(system_events("mail.delivery")) == len(system_events("mail.bounce")) == 1


def test_a_delivery_reported_after_the_bounce_keeps_the_email_bounced(api, world, postmark, client):
    email = delivered_through_postmark(api, world, postmark)
    postmark_post(client, postmark_bounce(email.provider_message_id))

    postmark_post(client, postmark_delivery(email.provider_message_id))

    email.refresh_from_db()
    assert email.status == EmailStatus.BOUNCED
    assert email.delivered_at == dt.datetime(2026, 1, 1, 12, 5, tzinfo=dt.UTC)


def test_a_postmark_soft_bounce_changes_nothing(api, world, postmark, client):
    email = delivered_through_postmark(api, world, postmark)
    before = snapshot()

    response = postmark_post(client, postmark_bounce(email.provider_message_id, kind="SoftBounce"))

    assert response.status_code == 200
    assert snapshot() == before


def test_a_postmark_spam_complaint_marks_the_email_complained_and_suppresses_the_address(
    api, world, postmark, client
):
    email = delivered_through_postmark(api, world, postmark)
    postmark_post(client, postmark_delivery(email.provider_message_id))

    response = postmark_post(client, postmark_complaint(email.provider_message_id))
    again = postmark_post(client, postmark_complaint(email.provider_message_id))

    assert response.status_code == again.status_code == 200
    email.refresh_from_db()
    assert email.status == EmailStatus.COMPLAINED
    assert email.complained_at == dt.datetime(2026, 1, 1, 12, 7, tzinfo=dt.UTC)
    suppression = Suppression.objects.get(project=world.project)
    assert suppression.reason == "complaint"
    assert len(system_events("mail.complaint")) == 1


def test_an_address_already_suppressed_keeps_its_first_reason(api, world, postmark, client):
    email = delivered_through_postmark(api, world, postmark)
    SuppressionFactory(project=world.project, email="ada@example.net", reason="manual")

    postmark_post(client, postmark_bounce(email.provider_message_id))

    email.refresh_from_db()
    assert email.status == EmailStatus.BOUNCED
    assert Suppression.objects.get(project=world.project).reason == "manual"


def test_an_event_for_an_unknown_message_is_acknowledged_and_ignored(
    api, world, postmark, client, caplog
):
    delivered_through_postmark(api, world, postmark)
    before = snapshot()

    with caplog.at_level("INFO", logger="messaging.services.esp_events"):
        response = postmark_post(client, postmark_bounce("00000000-dead-beef-0000-000000000000"))

    assert response.status_code == 200
    assert snapshot() == before
    assert "unknown message" in caplog.text


def test_postmark_events_without_the_webhook_secret_are_refused_and_change_nothing(
    api, world, postmark, client
):
    email = delivered_through_postmark(api, world, postmark)
    before = snapshot()

    wrong = postmark_post(
        client, postmark_bounce(email.provider_message_id), credentials="postmark:guess"
    )
    missing = postmark_post(client, postmark_bounce(email.provider_message_id), credentials=None)

    for response in (wrong, missing):
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthenticated"
    assert snapshot() == before


def test_webhooks_need_no_csrf_token(api, world, postmark):
    email = delivered_through_postmark(api, world, postmark)
    strict = Client(enforce_csrf_checks=True)

    response = postmark_post(strict, postmark_delivery(email.provider_message_id))

    assert response.status_code == 200
    email.refresh_from_db()
    assert email.status == EmailStatus.DELIVERED


def test_a_webhook_that_cannot_authenticate_its_caller_is_not_served(settings, client, world):
    settings.ANYMAIL = {}
    email = sent_email(world, provider_message_id="pm-1")
    before = snapshot()

    response = postmark_post(client, postmark_bounce(email.provider_message_id), credentials=None)

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert snapshot() == before


def test_a_rotated_webhook_secret_accepts_the_old_and_the_new_one(settings, client, world):
    settings.ANYMAIL = {"WEBHOOK_SECRET": ["postmark:old", "postmark:new"]}
    email = sent_email(world, provider_message_id="pm-2")

    old = postmark_post(client, postmark_delivery("pm-2"), credentials="postmark:old")
    new = postmark_post(client, postmark_bounce("pm-2"), credentials="postmark:new")

    assert old.status_code == new.status_code == 200
    email.refresh_from_db()
    assert email.status == EmailStatus.BOUNCED


def test_an_authenticated_body_that_is_not_json_is_a_400_not_a_retry(settings, client, world):
    settings.ANYMAIL = {"WEBHOOK_SECRET": SECRET}
    before = snapshot()

    broken = client.post(
        "/webhooks/email/postmark",
        '{"RecordType": "Bounce",',
        content_type="application/json",
        **basic_auth(SECRET),
    )
    anonymous = client.post("/webhooks/email/postmark", "not json", content_type="application/json")

    assert broken.status_code == 400
    assert broken.json()["error"]["code"] == "invalid_json"
    assert anonymous.status_code == 401
    assert snapshot() == before


def postmark_open(message_id: str, *, at: str = "2026-01-01T12:10:00Z") -> dict[str, Any]:
    return {
        "RecordType": "Open",
        "MessageStream": "outbound",
        "FirstOpen": True,
        "Client": {"Name": "Chrome 120", "Company": "Google", "Family": "Chrome"},
        "OS": {"Name": "macOS", "Company": "Apple", "Family": "macOS"},
        "Platform": "Desktop",
        "UserAgent": "Mozilla/5.0",
        "ReadSeconds": 5,
        "Geo": {},
        "MessageID": message_id,
        "Metadata": {},
        "ReceivedAt": at,
        "Tag": "",
        "Recipient": "ada@example.net",
    }


def postmark_click(message_id: str) -> dict[str, Any]:
    return {
        "RecordType": "Click",
        "MessageStream": "outbound",
        "ClickLocation": "HTML",
        "Platform": "Desktop",
        "UserAgent": "Mozilla/5.0",
        "OriginalLink": "https://example.com/pricing",
        "MessageID": message_id,
        "Metadata": {},
        "ReceivedAt": "2026-01-01T12:11:00Z",
        "Tag": "",
        "Recipient": "ada@example.net",
    }


def test_postmark_opens_are_recorded_once_per_event_however_often_it_is_resent(
    api, world, postmark, client
):
    email = delivered_through_postmark(api, world, postmark)

    first = postmark_post(client, postmark_open(email.provider_message_id))
    resent = postmark_post(client, postmark_open(email.provider_message_id))
    later = postmark_post(
        client, postmark_open(email.provider_message_id, at="2026-01-02T08:00:00Z")
    )

    assert first.status_code == resent.status_code == later.status_code == 200
    email.refresh_from_db()
    assert email.opened_at == dt.datetime(2026, 1, 1, 12, 10, tzinfo=dt.UTC)
    assert email.status == EmailStatus.SENT
    opens = system_events("mail.open")
    assert [(e.payload["source"], e.payload["first"]) for e in opens] == [
        ("esp", True),
        ("esp", False),
    ]
    assert opens[0].payload["email_id"] == str(email.pk)
    assert opens[0].contact_id == email.contact_id


def test_a_postmark_click_records_the_click_and_the_open_it_implies(api, world, postmark, client):
    email = delivered_through_postmark(api, world, postmark)

    postmark_post(client, postmark_click(email.provider_message_id))
    postmark_post(client, postmark_click(email.provider_message_id))

    email.refresh_from_db()
    assert email.clicked_at == email.opened_at == dt.datetime(2026, 1, 1, 12, 11, tzinfo=dt.UTC)
    [click] = system_events("mail.click")
    assert click.payload["url"] == "https://example.com/pricing"
    assert click.payload["source"] == "esp"
    [opened] = system_events("mail.open")
    assert opened.payload["source"] == "click"


def test_an_unsubscribe_reported_by_the_esp_suppresses_the_address_once(
    api, world, postmark, client
):
    email = delivered_through_postmark(api, world, postmark)
    change = {
        "RecordType": "SubscriptionChange",
        "MessageID": email.provider_message_id,
        "ServerID": 23,
        "MessageStream": "outbound",
        "ChangedAt": "2026-01-01T12:12:00Z",
        "Recipient": "ada@example.net",
        "Origin": "Recipient",
        "SuppressSending": True,
        "SuppressionReason": "ManualSuppression",
        "Tag": "",
        "Metadata": {},
    }

    postmark_post(client, change)
    postmark_post(client, change)

    assert list(Suppression.objects.values_list("email", "reason")) == [
        ("ada@example.net", "unsubscribe")
    ]
    [event] = system_events("mail.unsubscribe")
    assert event.payload["source"] == "esp"
    email.refresh_from_db()
    assert email.status == EmailStatus.SENT


# --- Paths -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/webhooks/email/nosuchesp", "/webhooks/email/postmark/", "/webhooks/email"]
)
def test_unknown_esps_and_other_spellings_of_the_path_are_not_found(settings, client, path):
    settings.ANYMAIL = {"WEBHOOK_SECRET": SECRET}

    response = client.post(path, "{}", content_type="application/json", **basic_auth(SECRET))

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_a_webhook_answers_only_post_and_head(settings, client):
    settings.ANYMAIL = {"WEBHOOK_SECRET": SECRET}

    get = client.get("/webhooks/email/postmark", **basic_auth(SECRET))
    head = client.head("/webhooks/email/postmark", **basic_auth(SECRET))

    assert get.status_code == 405
    assert get.json()["error"]["code"] == "method_not_allowed"
    assert head.status_code == 200


# --- SendGrid: signed event webhook (ECDSA), batches of events ---------------------------


@pytest.fixture
def sendgrid_key(settings: Any) -> ec.EllipticCurvePrivateKey:
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    settings.ANYMAIL = {
        "SENDGRID_TRACKING_WEBHOOK_VERIFICATION_KEY": base64.b64encode(public).decode()
    }
    return key


def sendgrid_post(client: Any, events: Any, *, key: ec.EllipticCurvePrivateKey) -> Any:
    body = json.dumps(events).encode()
    timestamp = str(int(time.time()))
    signature = key.sign(timestamp.encode() + body, ec.ECDSA(hashes.SHA256()))
    return client.post(
        "/webhooks/email/sendgrid",
        body,
        content_type="application/json",
        HTTP_X_TWILIO_EMAIL_EVENT_WEBHOOK_SIGNATURE=base64.b64encode(signature).decode(),
        HTTP_X_TWILIO_EMAIL_EVENT_WEBHOOK_TIMESTAMP=timestamp,
    )


def sendgrid_event(event: str, anymail_id: str, email: str, **extra: Any) -> dict[str, Any]:
    return {
        "email": email,
        "timestamp": 1767269100,  # 2026-01-01T12:05:00Z
        "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>",
        "event": event,
        "category": [],
        "sg_event_id": f"sg-{event}-{anymail_id}",
        "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0",
        "anymail_id": anymail_id,
        **extra,
    }


def test_a_signed_sendgrid_batch_applies_each_of_its_events(client, world, sendgrid_key):
    delivered = sent_email(world, provider_message_id="sg-1", to="ada@example.net")
    bounced = sent_email(world, provider_message_id="sg-2", to="bob@example.net")
    events = [
        sendgrid_event("processed", "sg-1", "ada@example.net"),
        sendgrid_event("delivered", "sg-1", "ada@example.net", response="250 OK"),
        sendgrid_event(
            "bounce", "sg-2", "bob@example.net", type="bounce", status="5.1.1", reason="550 no"
        ),
        sendgrid_event("delivered", "sg-unknown", "eve@example.net"),
    ]

    response = sendgrid_post(client, events, key=sendgrid_key)

    assert response.status_code == 200
    delivered.refresh_from_db()
    bounced.refresh_from_db()
    assert delivered.status == EmailStatus.DELIVERED
    assert delivered.delivered_at == dt.datetime(2026, 1, 1, 12, 5, tzinfo=dt.UTC)
    assert bounced.status == EmailStatus.BOUNCED
    assert list(Suppression.objects.values_list("email", "reason")) == [
        ("bob@example.net", "bounce")
    ]
    assert [e.payload["email_id"] for e in system_events("mail.delivery")] == [str(delivered.pk)]
    assert [e.payload["email_id"] for e in system_events("mail.bounce")] == [str(bounced.pk)]


def test_a_sendgrid_blocked_bounce_is_soft_and_changes_nothing(client, world, sendgrid_key):
    sent_email(world, provider_message_id="sg-3")
    before = snapshot()
    blocked = sendgrid_event("bounce", "sg-3", "ada@example.net", type="blocked", reason="421")

    assert sendgrid_post(client, [blocked], key=sendgrid_key).status_code == 200

    assert snapshot() == before


def test_a_sendgrid_drop_of_an_invalid_address_bounces_and_any_other_drop_fails_the_email(
    client, world, sendgrid_key
):
    invalid = sent_email(world, provider_message_id="sg-4", to="nobody@example.net")
    spam = sent_email(world, provider_message_id="sg-5", to="carol@example.net")
    events = [
        sendgrid_event("dropped", "sg-4", "nobody@example.net", reason="Invalid"),
        sendgrid_event("dropped", "sg-5", "carol@example.net", reason="Spam Content"),
    ]

    assert sendgrid_post(client, events, key=sendgrid_key).status_code == 200

    invalid.refresh_from_db()
    spam.refresh_from_db()
    assert invalid.status == EmailStatus.BOUNCED
    assert spam.status == EmailStatus.FAILED
    assert spam.last_error == "SendGrid did not send the message (other)"
    assert list(Suppression.objects.values_list("email", flat=True)) == ["nobody@example.net"]
    assert system_events("mail.bounce")[0].payload["email_id"] == str(invalid.pk)


def test_a_sendgrid_batch_with_a_bad_signature_is_refused_and_changes_nothing(
    client, world, sendgrid_key
):
    sent_email(world, provider_message_id="sg-6")
    before = snapshot()
    impostor = ec.generate_private_key(ec.SECP256R1())

    response = sendgrid_post(
        client, [sendgrid_event("bounce", "sg-6", "ada@example.net")], key=impostor
    )

    assert response.status_code == 401
    assert snapshot() == before


def test_a_signed_sendgrid_body_that_is_not_a_list_of_events_is_a_400(client, world, sendgrid_key):
    sent_email(world, provider_message_id="sg-7")
    before = snapshot()

    response = sendgrid_post(client, {"event": "bounce"}, key=sendgrid_key)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    assert snapshot() == before


# --- Mailgun: HMAC-SHA256 signature with the webhook signing key -------------------------


def mailgun_post(
    client: Any, event_data: dict[str, Any], *, key: str = MAILGUN_KEY, token: str = "tok-1"
) -> Any:
    timestamp = str(int(time.time()))
    signature = hmac.new(key.encode(), f"{timestamp}{token}".encode(), hashlib.sha256).hexdigest()
    body = {
        "signature": {"timestamp": timestamp, "token": token, "signature": signature},
        "event-data": event_data,
    }
    return client.post("/webhooks/email/mailgun", json.dumps(body), content_type="application/json")


def mailgun_event(event: str, message_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "event": event,
        "id": "G9Bn5sl1TC6nu79C8C0bwg",
        "timestamp": 1767269160.0,  # 2026-01-01T12:06:00Z
        "recipient": "ada@example.net",
        "tags": [],
        "user-variables": {},
        "message": {"headers": {"message-id": message_id, "to": "ada@example.net"}},
        **extra,
    }


@pytest.fixture
def mailgun(settings: Any) -> None:
    settings.ANYMAIL = {"MAILGUN_WEBHOOK_SIGNING_KEY": MAILGUN_KEY}


def test_a_signed_mailgun_permanent_failure_bounces_the_email(client, world, mailgun):
    # Mailgun names messages by the Message-ID its API answered, angle brackets included.
    email = sent_email(world, provider_message_id="<20260101120000.1.ABC@mg.example.com>")
    failed = mailgun_event(
        "failed",
        "20260101120000.1.ABC@mg.example.com",
        severity="permanent",
        reason="bounce",
        **{"delivery-status": {"code": 550, "message": "No such user", "description": ""}},
    )

    response = mailgun_post(client, failed)

    assert response.status_code == 200
    email.refresh_from_db()
    assert email.status == EmailStatus.BOUNCED
    assert email.bounced_at == dt.datetime(2026, 1, 1, 12, 6, tzinfo=dt.UTC)
    assert Suppression.objects.get().reason == "bounce"


def test_a_mailgun_temporary_failure_changes_nothing(client, world, mailgun):
    sent_email(world, provider_message_id="<m-temp@mg.example.com>")
    before = snapshot()

    response = mailgun_post(
        client, mailgun_event("failed", "m-temp@mg.example.com", severity="temporary")
    )

    assert response.status_code == 200
    assert snapshot() == before


def test_a_mailgun_complaint_names_the_email_by_our_message_id_header(client, world, mailgun):
    # Sent through an ESP's SMTP relay, the email has no provider id; the ESP quotes the
    # Message-ID header we chose.
    email = EmailFactory(
        project=world.project, to=["ada@example.net"], status=EmailStatus.SENT, sent_at=SENT_AT
    )

    mailgun_post(client, mailgun_event("complained", email.message_id.strip("<>")))

    email.refresh_from_db()
    assert email.status == EmailStatus.COMPLAINED
    assert Suppression.objects.get().reason == "complaint"
    [event] = system_events("mail.complaint")
    assert event.payload == {"email_id": str(email.pk), "contact_id": None, "template_id": None}


def test_a_mailgun_event_with_a_wrong_signature_is_refused_and_changes_nothing(
    client, world, mailgun
):
    sent_email(world, provider_message_id="<m-sig@mg.example.com>")
    before = snapshot()

    response = mailgun_post(
        client, mailgun_event("complained", "m-sig@mg.example.com"), key="key-not-the-one"
    )

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"
    assert snapshot() == before


def test_the_mailgun_webhook_without_its_signing_key_is_not_served(settings, client, world):
    settings.ANYMAIL = {"WEBHOOK_SECRET": SECRET}
    sent_email(world, provider_message_id="<m-nokey@mg.example.com>")
    before = snapshot()

    response = mailgun_post(client, mailgun_event("complained", "m-nokey@mg.example.com"))

    assert response.status_code == 404
    assert snapshot() == before


# --- Amazon SES: SNS notifications -------------------------------------------------------


def test_an_amazon_ses_bounce_notification_bounces_the_email(settings, client, world):
    # anymail's SES views need boto3 (for confirming SNS subscriptions), which is an extra
    # of django-anymail this service does not install; without it the webhook is not served.
    pytest.importorskip("boto3")
    settings.ANYMAIL = {
        "WEBHOOK_SECRET": SECRET,
        "AMAZON_SES_AUTO_CONFIRM_SNS_SUBSCRIPTIONS": False,
    }
    email = sent_email(world, provider_message_id="0100018d-ses-0001")
    ses = {
        "notificationType": "Bounce",
        "bounce": {
            "bounceType": "Permanent",
            "bounceSubType": "General",
            "bouncedRecipients": [{"emailAddress": "ada@example.net", "status": "5.1.1"}],
            "timestamp": "2026-01-01T12:06:00.000Z",
            "feedbackId": "0100018d-feedback",
        },
        "mail": {
            "timestamp": "2026-01-01T12:00:00.000Z",
            "messageId": "0100018d-ses-0001",
            "source": "team@example.com",
            "destination": ["ada@example.net"],
        },
    }
    notification = {
        "Type": "Notification",
        "MessageId": "sns-message-1",
        "TopicArn": "arn:aws:sns:us-east-1:123456789012:ses-events",
        "Message": json.dumps(ses),
        "Timestamp": "2026-01-01T12:06:01.000Z",
        "SignatureVersion": "1",
    }

    response = client.post(
        "/webhooks/email/amazon_ses",
        json.dumps(notification),
        content_type="text/plain",
        HTTP_X_AMZ_SNS_MESSAGE_TYPE="Notification",
        HTTP_X_AMZ_SNS_MESSAGE_ID="sns-message-1",
        **basic_auth(SECRET),
    )

    assert response.status_code == 200
    email.refresh_from_db()
    assert email.status == EmailStatus.BOUNCED


def test_the_amazon_ses_webhook_without_boto3_is_not_served(settings, client):
    try:
        import boto3  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("boto3 is installed: the SES webhook is served")
    settings.ANYMAIL = {"WEBHOOK_SECRET": SECRET}

    response = client.post(
        "/webhooks/email/amazon_ses", "{}", content_type="text/plain", **basic_auth(SECRET)
    )

    assert response.status_code == 404


# --- Receipts of opens and clicks --------------------------------------------------------


def test_receipts_older_than_a_week_are_purged_in_batches(clock):
    for days in (8, 9, 10):
        clock.set(dt.datetime(2026, 1, 20, tzinfo=dt.UTC) - dt.timedelta(days=days))
        EspEventReceipt.objects.create(fingerprint=f"old-{days}")
    clock.set(dt.datetime(2026, 1, 14, tzinfo=dt.UTC))
    EspEventReceipt.objects.create(fingerprint="recent")
    clock.set(dt.datetime(2026, 1, 20, tzinfo=dt.UTC))

    assert esp_event_receipts_purge(batch_size=1, max_rows=2) == 2
    assert purge_esp_receipts() == 1

    assert list(EspEventReceipt.objects.values_list("fingerprint", flat=True)) == ["recent"]
