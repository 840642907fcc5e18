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


def test_a_dead_delivery_page_requeues_it_with_its_button(client, world):
    dead = PushDeliveryFactory(message__app__project=world.project, dead=True)
    PushMessage.objects.filter(pk=dead.message_id).update(status="failed")
    user = UserFactory(username="operator@example.com", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(codename__in=["view_pushdelivery", "change_pushdelivery"])
    )
    client.force_login(user)
    button = f"/admin/pushproviders/pushdelivery/{dead.id}/requeue/"

    page = client.get(f"/admin/pushproviders/pushdelivery/{dead.id}/change/")
    response = client.post(button)
    again = client.post(button, follow=True)

    assert button in page.content.decode()
    assert b"Requeue this delivery" in page.content
    assert response.status_code == 302
    assert PushDelivery.objects.get(pk=dead.pk).status == "accepted"
    assert "The delivery was left alone: no longer dead-lettered." in again.content.decode()


def test_staff_who_may_only_view_deliveries_get_no_requeue_button(client, world):
    dead = PushDeliveryFactory(message__app__project=world.project, dead=True)
    user = UserFactory(username="onlooker@example.com", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="view_pushdelivery"))
    client.force_login(user)

    page = client.get(f"/admin/pushproviders/pushdelivery/{dead.id}/change/")
    refused = client.post(f"/admin/pushproviders/pushdelivery/{dead.id}/requeue/")

    assert page.status_code == 200
    assert b"Requeue this delivery" not in page.content
    assert refused.status_code == 403
    assert PushDelivery.objects.get(pk=dead.pk).status == "dead_lettered"
