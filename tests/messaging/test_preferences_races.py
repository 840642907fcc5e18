"""Concurrent preference changes of one contact against PostgreSQL: real threads and
connections through the API. The contact's row lock orders them, so a retried or doubled
"unsubscribe from all" acts once."""

import pytest

from contacts.topics.models import Subscription
from events.models import Event
from messaging.models import Suppression
from tests.conftest import Api
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_races import run_in_threads
from tests.contacts.topics.factories import TopicFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_unsubscribes_from_all_act_once(world):
    key = world.keys["project"]
    contact = ContactFactory(project=world.project, email="race@example.com")
    topics = [TopicFactory(project=world.project, opt_out=True) for _ in range(3)]
    url = f"/contacts/{contact.id}/preferences"
    Api().get(url, key=key)  # caches the key

    def leave(index: int) -> tuple[int, dict]:
        response = Api().patch(url, {"unsubscribed_all": True}, key=key)
        return response.status_code, response.json()["data"]

    results = run_in_threads(10, leave)

    assert {status for status, _ in results} == {200}
    assert all(data["unsubscribed_all"] for _, data in results)
    assert Suppression.objects.filter(project=world.project).count() == 1
    assert Subscription.objects.filter(contact=contact, status="unsubscribed").count() == len(
        topics
    )
    assert Event.objects.filter(event="sendrealm.mail.unsubscribe").count() == 1
    assert Event.objects.filter(event="sendrealm.topic.unsubscribed").count() == len(topics)
