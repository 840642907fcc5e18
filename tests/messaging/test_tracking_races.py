"""Opens, clicks and unsubscribes of one email at the same moment, against PostgreSQL:
real threads and connections through the public pages."""

import pytest
from django.test import Client

from contacts.topics.models import SubscriptionStatus
from events.models import Event
from messaging.models import Email, Suppression
from messaging.services.tokens import click_token, open_token, unsubscribe_token
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_races import run_in_threads
from tests.contacts.topics.factories import SubscriptionFactory, TopicFactory
from tests.messaging.factories_emails import EmailFactory

pytestmark = pytest.mark.django_db(transaction=True)

ONE_CLICK = {
    "data": "List-Unsubscribe=One-Click",
    "content_type": "application/x-www-form-urlencoded",
}


def test_concurrent_opens_and_clicks_set_one_first_time_each(world):
    email = EmailFactory(project=world.project, sent=True)
    pixel = f"/t/o/{open_token(email.id)}"
    link = f"/t/c/{click_token(email.id, 'https://example.com/a')}"

    def follow(index: int) -> int:
        return Client().get(pixel if index % 2 else link).status_code

    statuses = run_in_threads(16, follow)

    assert sorted(set(statuses)) == [200, 302]
    opens = Event.objects.filter(event="sendrealm.mail.open")
    clicks = Event.objects.filter(event="sendrealm.mail.click")
    assert [e.payload["first"] for e in clicks].count(True) == 1
    assert clicks.count() == 8
    # Eight pixel opens, plus one open implied by a click when it came first.
    assert [e.payload["first"] for e in opens].count(True) == 1
    assert opens.filter(payload__source="pixel").count() == 8
    email.refresh_from_db()
    assert email.opened_at is not None
    assert email.clicked_at is not None


def test_concurrent_one_click_unsubscribes_suppress_once(world):
    email = EmailFactory(project=world.project, sent=True, to=["ada@example.net"])
    path = f"/u/{unsubscribe_token(email.id, 'ada@example.net')}"

    statuses = run_in_threads(10, lambda _: Client().post(path, **ONE_CLICK).status_code)

    assert statuses == [200] * 10
    assert Suppression.objects.filter(project=world.project).count() == 1
    assert Event.objects.filter(event="sendrealm.mail.unsubscribe").count() == 1


def test_concurrent_unsubscribes_from_a_topic_leave_it_once(world):
    topic = TopicFactory(project=world.project)
    contact = ContactFactory(project=world.project, email="ada@example.net")
    subscription = SubscriptionFactory(topic=topic, contact=contact)
    email = EmailFactory(project=world.project, sent=True, contact=contact, topic=topic)
    path = f"/u/{unsubscribe_token(email.id, 'ada@example.net')}"

    statuses = run_in_threads(10, lambda _: Client().post(path, **ONE_CLICK).status_code)

    assert statuses == [200] * 10
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.UNSUBSCRIBED
    assert Event.objects.filter(event="sendrealm.mail.unsubscribe").count() == 1
    assert Event.objects.filter(event="sendrealm.topic.unsubscribed").count() == 1
    assert not Suppression.objects.exists()
    assert Email.objects.get().topic_id == topic.id
