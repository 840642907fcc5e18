import pytest

from contacts.topics.models import Subscription
from contacts.topics.services import subscriptions_set
from events.models import Event
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_races import run_in_threads
from tests.contacts.topics.factories import TopicFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_subscribes_record_one_subscription_and_one_event(world):
    topic = TopicFactory(project=world.project)
    contact = ContactFactory(project=world.project)

    def subscribe(index: int) -> str:
        [status] = subscriptions_set(
            project=world.project,
            contact_id=contact.id,
            changes=[{"topic_id": topic.id, "status": "subscribed"}],
        )
        return status.status

    assert set(run_in_threads(20, subscribe)) == {"subscribed"}
    assert Subscription.objects.filter(topic=topic, contact=contact).count() == 1
    assert Event.objects.filter(event="sendrealm.topic.subscribed").count() == 1
