"""The staff console's webhook pages (read-only, secrets never shown, failed deliveries
requeued), and the Celery tasks run eagerly (the same drain a worker runs)."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.test import Client

from config.celery import app as celery_app
from config.runtime import secrets
from events.services.processing import events_process_batch
from tests.factories import UserFactory
from tests.webhooks.conftest import Reply, drain, verified
from tests.webhooks.factories import WebhookDeliveryFactory, WebhookEndpointFactory
from tests.webhooks.test_delivery import deliveries, endpoint, send
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.tasks import deliver, purge_expired, sweep

pytestmark = pytest.mark.django_db


@pytest.fixture
def failed_delivery(api, world, receiver, wall_clock, settings):
    settings.WEBHOOK_RETRY_MAX_ATTEMPTS = 1
    hook = endpoint(api, world, receiver.url)
    receiver.reply(Reply(status=500, body=b"nope"))
    send(api, world)
    drain()
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == "failed"
    assert delivery.status == "dead_lettered"
    return hook, delivery


def test_the_pages_show_endpoints_and_deliveries_without_secrets(admin_user, failed_delivery):
    hook, delivery = failed_delivery
    staff = Client()
    staff.force_login(admin_user)
    stored = WebhookEndpoint.objects.get()

    pages = [
        staff.get("/admin/webhooks/webhookendpoint/"),
        staff.get(f"/admin/webhooks/webhookendpoint/{stored.pk}/change/"),
        staff.get("/admin/webhooks/webhookdelivery/"),
        staff.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/"),
        staff.get(f"/admin/webhooks/webhookdelivery/?q={delivery.webhook_id}"),
    ]

    for page in pages:
        assert page.status_code == 200
        text = page.content.decode()
        assert hook["secret"] not in text
        assert stored.secret not in text
    assert "HTTP 500: nope" in pages[3].content.decode()
    assert str(delivery.pk) in pages[4].content.decode()
    assert secrets.decrypt(stored.secret) == hook["secret"]


def test_staff_who_may_change_deliveries_requeue_failed_ones(
    client, world, receiver, failed_delivery
):
    hook, delivery = failed_delivery
    user = UserFactory(username="operator@example.com", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(codename__in=["view_webhookdelivery", "change_webhookdelivery"])
    )
    client.force_login(user)

    response = client.post(
        "/admin/webhooks/webhookdelivery/",
        {"action": "requeue", ACTION_CHECKBOX_NAME: [str(delivery.pk)]},
    )
    drain()

    assert response.status_code == 302
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempt_count) == ("delivered", 2)
    first, second = receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    verified(hook["secret"], second)


def test_the_tasks_deliver_on_their_own_queue(api, world, receiver, wall_clock):
    hook = endpoint(api, world, receiver.url)
    send(api, world)
    while events_process_batch().claimed:
        pass

    claimed = deliver.apply().get()
    swept = sweep.apply().get()

    assert (claimed, swept) == (1, 0)
    verified(hook["secret"], receiver.received[0])
    assert deliveries(api, world, hook["id"])[0]["status"] == "delivered"
    route = celery_app.amqp.router.route({}, "webhooks.deliver")
    assert route["queue"].name == "webhooks"
    assert celery_app.conf.beat_schedule["webhooks.sweep"]["task"] == "webhooks.sweep"


def test_the_purge_deletes_final_deliveries_past_retention_only(world, clock, settings):
    settings.WEBHOOK_RETENTION_DAYS = 30
    old_delivered = WebhookDeliveryFactory(endpoint__project=world.project, state="delivered")
    old_failed = WebhookDeliveryFactory(endpoint=old_delivered.endpoint, dead=True)
    old_pending = WebhookDeliveryFactory(endpoint=old_delivered.endpoint)
    clock.advance(days=30, seconds=1)
    recent = WebhookDeliveryFactory(endpoint=old_delivered.endpoint, state="delivered")

    deleted = purge_expired.apply().get()

    assert deleted == 2
    assert set(WebhookDelivery.objects.values_list("pk", flat=True)) == {
        old_pending.pk,
        recent.pk,
    }
    assert old_failed.endpoint_id == old_delivered.endpoint_id


def test_the_purge_removes_endpoints_deleted_long_ago_once_their_log_is_empty(
    world, clock, settings
):
    settings.WEBHOOK_RETENTION_DAYS = 30
    kept_log = WebhookDeliveryFactory(endpoint__project=world.project)  # pending: stays
    empty = WebhookEndpointFactory(project=world.project)
    recent = WebhookEndpointFactory(project=world.project)
    WebhookEndpoint.objects.filter(pk__in=[kept_log.endpoint_id, empty.pk]).update(
        deleted_at=clock.current
    )
    clock.advance(days=31)
    WebhookEndpoint.objects.filter(pk=recent.pk).update(deleted_at=clock.current)

    purge_expired.apply().get()

    assert set(WebhookEndpoint.objects.values_list("pk", flat=True)) == {
        kept_log.endpoint_id,
        recent.pk,
    }


def test_the_sweep_fails_deliveries_a_time_limit_dead_lettered(world, clock):
    """The kit hands a batch back when the task's time limit runs out; on the last
    attempt that dead-letters the row without the delivery's own outcome."""
    delivery = WebhookDeliveryFactory(
        endpoint__project=world.project,
        status="dead_lettered",
        next_attempt_at=None,
        last_error="TimeLimitReached: The task's time limit ran out while this row was held.",
    )

    sweep.apply().get()

    delivery.refresh_from_db()
    assert delivery.state == "failed"
    assert delivery.error.startswith("TimeLimitReached:")
