import pytest

from contacts.audiences.models import AudienceMembership
from contacts.audiences.services import membership_add
from events.models import Event
from tests.contacts.audiences.factories import AudienceFactory
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_races import run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_adds_of_one_contact_make_one_membership_and_one_entered_event(world):
    audience = AudienceFactory(project=world.project)
    contact = ContactFactory(project=world.project)

    def add(index: int) -> bool:
        _, created = membership_add(
            project=world.project, audience_id=audience.id, contact_id=contact.id
        )
        return created

    results = run_in_threads(20, add)
    assert results.count(True) == 1
    assert AudienceMembership.objects.filter(audience=audience, contact=contact).count() == 1
    assert Event.objects.filter(event="sendrealm.audience.entered").count() == 1
