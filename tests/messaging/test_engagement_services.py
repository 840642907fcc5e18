"""The engagement services as other senders of opens and clicks (ESP webhooks) call them."""

import datetime as dt
import uuid

import pytest

from events.models import Event
from messaging.models import Suppression
from messaging.services.engagement import (
    email_click_record,
    email_open_record,
    email_unsubscribe_record,
)
from tests.contacts.factories import ContactFactory
from tests.messaging.factories_emails import EmailFactory
from tests.messaging.factories_templates import MessageTemplateFactory

pytestmark = pytest.mark.django_db

REPORTED = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC)


def payloads(name):
    return [e.payload for e in Event.objects.filter(event=f"sendrealm.mail.{name}")]


def test_an_open_reported_by_an_esp_keeps_the_reported_time_and_source(world, clock):
    contact = ContactFactory(project=world.project)
    template = MessageTemplateFactory(project=world.project)
    email = EmailFactory(project=world.project, sent=True, contact=contact, template=template)

    recorded = email_open_record(email_id=email.id, at=REPORTED, source="esp")

    assert recorded is not None
    assert recorded.opened_at == REPORTED
    email.refresh_from_db()
    assert email.opened_at == REPORTED
    [event] = Event.objects.filter(event="sendrealm.mail.open")
    assert event.payload == {
        "email_id": str(email.id),
        "contact_id": str(contact.id),
        "template_id": str(template.id),
        "source": "esp",
        "first": True,
    }
    assert event.contact_id == contact.id
    assert event.project_id == world.project.id


def test_a_click_reported_by_an_esp_carries_its_url(world, clock):
    email = EmailFactory(project=world.project, sent=True)

    email_click_record(email_id=str(email.id), url="https://example.com/x", source="esp")
    email_click_record(email_id=email.id, url="https://example.com/y", at=REPORTED, source="esp")

    email.refresh_from_db()
    assert email.clicked_at == clock()
    assert email.opened_at == clock()
    assert [(p["url"], p["first"], p["source"]) for p in payloads("click")] == [
        ("https://example.com/x", True, "esp"),
        ("https://example.com/y", False, "esp"),
    ]
    assert [p["source"] for p in payloads("open")] == ["click"]


@pytest.mark.parametrize("email_id", [uuid.uuid4(), "not-a-uuid", ""])
def test_an_unknown_email_records_nothing(world, email_id):
    assert email_open_record(email_id=email_id) is None
    assert email_click_record(email_id=email_id, url="https://example.com") is None
    assert email_unsubscribe_record(email_id=email_id, recipient="a@example.com") is None

    assert not Event.objects.exists()
    assert not Suppression.objects.exists()


def test_an_unsubscribe_of_something_that_is_not_an_address_does_nothing(world):
    email = EmailFactory(project=world.project, sent=True)

    assert email_unsubscribe_record(email_id=email.id, recipient="not an address") is None

    assert not Suppression.objects.exists()
    assert not Event.objects.exists()


def test_an_unsubscribe_suppresses_the_address_in_the_projects_normal_form(world):
    email = EmailFactory(project=world.project, sent=True)

    done = email_unsubscribe_record(email_id=email.id, recipient=" Ada@Example.NET ", source="esp")

    assert done is not None
    assert done.changed is True
    assert done.topic is None
    assert Suppression.objects.get().email == "ada@example.net"
    assert [p["source"] for p in payloads("unsubscribe")] == ["esp"]
