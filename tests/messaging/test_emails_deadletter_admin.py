"""The email dead-letter queue in the admin: deliveries a real SMTP server refused for good,
requeued one or many by staff who may change the queue, and then sent."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from config.workqueue.models import WorkStatus
from messaging.models import Email, EmailDelivery, EmailStatus
from messaging.queue import EMAIL_QUEUE
from messaging.services.delivery import emails_deliver_batch
from tests.factories import UserFactory
from tests.messaging.smtp_server import SmtpServer, smtp_server_for

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:messaging_deadletteredemaildelivery_changelist"


@pytest.fixture
def smtp(settings: Any) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


@pytest.fixture
def staff(admin_user: Any) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def staff_with(*codenames: str) -> Client:
    user = UserFactory(username=f"{'-'.join(codenames)}@example.com", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="messaging",
            codename__in=codenames,
        )
    )
    client = Client()
    client.force_login(user)
    return client


def dead_lettered(api: Any, world: Any, smtp: SmtpServer, to: str = "ada@example.net") -> Email:
    """An email whose delivery the server refused with a permanent error."""
    response = api.post(
        "/emails",
        {"from": "team@example.com", "to": to, "subject": "Hi", "text": "Hello"},
        key=world.keys["project"],
    )
    assert response.status_code == 201, response.content
    smtp.handler.replies.append("550 5.7.1 Message rejected")
    assert emails_deliver_batch() == 1
    email = Email.objects.get(pk=response.json()["data"]["id"])
    assert email.status == EmailStatus.FAILED
    assert email.delivery.status == WorkStatus.DEAD_LETTERED
    return email


def test_the_queue_lists_only_dead_lettered_deliveries_and_filters_by_error(
    api, world, smtp, staff
):
    dead = dead_lettered(api, world, smtp)
    api.post(
        "/emails",
        {"from": "team@example.com", "to": "bob@example.net", "subject": "Hi", "text": "Hi"},
        key=world.keys["project"],
    )
    emails_deliver_batch()

    page = staff.get(reverse(CHANGELIST))
    filtered = staff.get(reverse(CHANGELIST), {"error": "smtp_999"})

    assert page.status_code == 200
    assert [delivery.pk for delivery in page.context["cl"].result_list] == [dead.pk]
    assert b"Requeue the selected dead-lettered deliveries" in page.content
    assert list(filtered.context["cl"].result_list) == []


def test_requeue_puts_the_emails_back_to_queued_wakes_the_workers_and_they_get_sent(
    api, world, smtp, staff, django_capture_on_commit_callbacks
):
    emails = [dead_lettered(api, world, smtp, to=f"user{n}@example.net") for n in range(2)]

    with django_capture_on_commit_callbacks() as callbacks:
        response = staff.post(
            reverse(CHANGELIST),
            {"action": "requeue", ACTION_CHECKBOX_NAME: [str(e.pk) for e in emails]},
        )

    assert response.status_code == 302
    assert EMAIL_QUEUE.wake in callbacks
    for email in emails:
        email.refresh_from_db()
        assert email.status == EmailStatus.QUEUED
        assert email.last_error is None
        assert email.delivery.status == WorkStatus.ACCEPTED
        assert email.delivery.attempts == 0
    assert emails_deliver_batch() == 2
    assert {e.status for e in Email.objects.filter(pk__in=[e.pk for e in emails])} == {"sent"}
    assert len(smtp.received) == 2


def test_requeue_one_from_its_page(api, world, smtp, staff):
    email = dead_lettered(api, world, smtp)
    change = staff.get(reverse("admin:messaging_deadletteredemaildelivery_change", args=[email.pk]))
    assert b"Requeue this delivery" in change.content
    url = reverse("admin:messaging_deadletteredemaildelivery_requeue", args=[email.pk])

    assert staff.get(url).status_code == 405
    assert staff.post(url).status_code == 302

    email.refresh_from_db()
    assert email.status == EmailStatus.QUEUED


def test_a_delivery_whose_email_is_no_longer_failed_is_not_requeued(api, world, smtp, staff):
    email = dead_lettered(api, world, smtp)
    # Sent after all (a worker recorded it as the delivery ran out of attempts).
    Email.objects.filter(pk=email.pk).update(status=EmailStatus.SENT)

    staff.post(reverse("admin:messaging_deadletteredemaildelivery_requeue", args=[email.pk]))

    assert EmailDelivery.objects.get(pk=email.pk).status == WorkStatus.DEAD_LETTERED
    assert Email.objects.get(pk=email.pk).status == EmailStatus.SENT


def test_staff_who_may_change_the_queue_can_requeue(api, world, smtp):
    email = dead_lettered(api, world, smtp)
    client = staff_with("view_deadletteredemaildelivery", "change_deadletteredemaildelivery")

    response = client.post(
        reverse(CHANGELIST), {"action": "requeue", ACTION_CHECKBOX_NAME: [str(email.pk)]}
    )

    assert response.status_code == 302
    email.refresh_from_db()
    assert email.status == EmailStatus.QUEUED


def test_staff_who_may_only_view_the_queue_cannot_requeue(api, world, smtp):
    email = dead_lettered(api, world, smtp)
    client = staff_with("view_deadletteredemaildelivery")

    page = client.get(reverse(CHANGELIST))
    assert page.status_code == 200
    assert b"Requeue the selected dead-lettered deliveries" not in page.content
    client.post(reverse(CHANGELIST), {"action": "requeue", ACTION_CHECKBOX_NAME: [str(email.pk)]})
    change = client.get(
        reverse("admin:messaging_deadletteredemaildelivery_change", args=[email.pk])
    )
    assert b"Requeue this delivery" not in change.content
    single = client.post(
        reverse("admin:messaging_deadletteredemaildelivery_requeue", args=[email.pk])
    )

    assert single.status_code == 403
    email.refresh_from_db()
    assert email.status == EmailStatus.FAILED
    assert email.delivery.status == WorkStatus.DEAD_LETTERED
