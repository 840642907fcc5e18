"""The staff console's push messages and deliveries: read-only pages with the deliveries
inline (never a device token), and the requeue of dead-lettered deliveries."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.test import Client

from pushproviders.models import PushDelivery, PushInstallation, PushMessage
from tests.factories import UserFactory
from tests.pushproviders.factories import PushDeliveryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_a_message_page_lists_its_deliveries_without_tokens(staff, world):
    delivery = PushDeliveryFactory(message__app__project=world.project, dead=True)
    token = delivery.installation.token

    page = staff.get(f"/admin/pushproviders/pushmessage/{delivery.message_id}/change/")
    listing = staff.get("/admin/pushproviders/pushdelivery/?queue=dead_lettered")
    detail = staff.get(f"/admin/pushproviders/pushdelivery/{delivery.id}/change/")

    for response in (page, listing, detail):
        assert response.status_code == 200
        assert token not in response.content.decode()
    assert str(delivery.installation_id) in page.content.decode()
    assert "FCM answered 503 UNAVAILABLE." in page.content.decode()


def test_a_delivery_whose_installation_is_gone_still_shows(staff, world):
    delivery = PushDeliveryFactory(message__app__project=world.project, dead=True)
    PushInstallation.objects.filter(pk=delivery.installation_id).delete()

    page = staff.get(f"/admin/pushproviders/pushmessage/{delivery.message_id}/change/")
    detail = staff.get(f"/admin/pushproviders/pushdelivery/{delivery.id}/change/")

    assert page.status_code == 200
    assert detail.status_code == 200
    assert str(delivery.installation_id) in detail.content.decode()


def test_staff_who_may_change_deliveries_requeue_the_dead_ones(client, world):
    dead = PushDeliveryFactory(message__app__project=world.project, dead=True)
    PushMessage.objects.filter(pk=dead.message_id).update(status="failed")
    queued = PushDeliveryFactory(message__app__project=world.project)
    user = UserFactory(username="operator@example.com", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(codename__in=["view_pushdelivery", "change_pushdelivery"])
    )
    client.force_login(user)

    response = client.post(
        "/admin/pushproviders/pushdelivery/",
        {"action": "requeue", ACTION_CHECKBOX_NAME: [str(dead.id), str(queued.id)]},
    )

    assert response.status_code == 302
    dead.refresh_from_db()
    assert (dead.status, dead.state, dead.attempts, dead.error) == ("accepted", "queued", 0, None)
    assert PushMessage.objects.get(pk=dead.message_id).status == "queued"
    assert PushDelivery.objects.get(pk=queued.pk).status == "accepted"
