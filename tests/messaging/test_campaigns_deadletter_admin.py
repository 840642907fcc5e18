"""Fan-out batches in the console: a batch whose retries ran out (the database kept
refusing its writes) keeps its campaign `sending`; staff who may change batches requeue
it, the send resumes and finishes with one message per contact; staff who may only view
cannot."""

import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.urls import reverse

from config.workqueue.models import WorkStatus
from messaging.models import Campaign, CampaignFanout, CampaignStatus, Email
from messaging.services.campaign_fanout import (
    CAMPAIGN_FANOUT_QUEUE,
    campaign_fanout_batch,
    campaign_fanouts_requeue,
)
from messaging.services.campaigns import campaign_approve
from messaging.services.delivery import emails_deliver_batch
from tests.factories import UserFactory
from tests.messaging.factories_campaigns import audience_with, email_template_id, reviewer
from tests.messaging.smtp_server import SmtpServer, smtp_server_for

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:messaging_campaignfanout_changelist"


@pytest.fixture
def smtp(settings: Any) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


def staff_with(*codenames: str) -> tuple[Any, Client]:
    user = UserFactory(username=f"{'-'.join(codenames)}@example.com", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="messaging", codename__in=codenames)
    )
    client = Client()
    client.force_login(user)
    return user, client


def refusing_new_emails() -> None:
    """The database refuses every new email (as a full disk would), until the
    test's transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE OR REPLACE FUNCTION pg_temp.refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON messaging_email "
            "FOR EACH ROW EXECUTE FUNCTION pg_temp.refuse()"
        )


def accepting_again() -> None:
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER refuse ON messaging_email")


def drain(batch: Any) -> int:
    done = 0
    while claimed := batch():
        done += claimed
    return done


@pytest.fixture
def stuck(api, world, settings, smtp):
    """A campaign of 4 contacts in batches of 2: the first batch made its emails, then the
    database refused the second batch's writes until its one attempt ran out."""
    world.project.default_from = "Shop <shop@example.com>"
    world.project.save()
    settings.CAMPAIGN_FANOUT_BATCH_SIZE = 2
    settings.CAMPAIGN_FANOUT_RETRY_MAX_ATTEMPTS = 1
    template_id = email_template_id(api, world)
    audience = audience_with(world.project, 4, first_name="Ada")
    key = world.keys["project"]
    created = api.post(
        "/campaigns",
        {"name": "Sale", "template_id": template_id, "audience_id": str(audience.id)},
        key=key,
    )
    campaign_id = created.json()["data"]["id"]
    api.post(f"/campaigns/{campaign_id}/actions/submit", {}, key=key)
    campaign_approve(campaign_id=campaign_id, user_id=reviewer().pk)
    assert api.post(f"/campaigns/{campaign_id}/actions/send", {}, key=key).status_code == 202
    assert campaign_fanout_batch() == 1
    refusing_new_emails()
    drain(campaign_fanout_batch)
    accepting_again()
    drain(emails_deliver_batch)
    campaign = Campaign.objects.get(pk=campaign_id)
    assert campaign.status == CampaignStatus.SENDING
    [dead] = CampaignFanout.objects.filter(campaign=campaign, status=WorkStatus.DEAD_LETTERED)
    assert "No space left on device" in dead.last_error
    assert Email.objects.filter(campaign=campaign).count() == 2
    return campaign, dead


def test_requeueing_the_dead_batch_resumes_the_send_with_one_message_per_contact(
    stuck, smtp, django_capture_on_commit_callbacks
):
    campaign, dead = stuck
    user, client = staff_with("view_campaignfanout", "change_campaignfanout")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            reverse(CHANGELIST), {"action": "requeue", ACTION_CHECKBOX_NAME: [str(dead.pk)]}
        )

    assert response.status_code == 302
    assert CAMPAIGN_FANOUT_QUEUE.wake in callbacks
    dead.refresh_from_db()
    assert (dead.status, dead.attempts) == (WorkStatus.ACCEPTED, 0)
    assert drain(campaign_fanout_batch) == 1
    drain(emails_deliver_batch)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.SENT
    reached = Counter(r.envelope_to[0] for r in smtp.received)
    assert len(reached) == 4
    assert set(reached.values()) == {1}
    emailed = list(Email.objects.filter(campaign=campaign).values_list("contact", flat=True))
    assert len(emailed) == len(set(emailed)) == 4
    entry = LogEntry.objects.filter(object_id=str(campaign.pk)).order_by("id").last()
    assert entry.user == user
    assert entry.get_change_message() == "Fan-out resumed: dead-lettered batch(es) 1 requeued"


def test_the_campaign_page_counts_the_dead_batch_and_links_to_the_batches(stuck):
    campaign, _ = stuck
    _, client = staff_with("view_campaign", "view_campaignfanout")

    page = client.get(reverse("admin:messaging_campaign_change", args=[campaign.pk]))
    batches = client.get(reverse(CHANGELIST), {"q": str(campaign.pk)})

    assert b"2 of 3 done, 1 dead-lettered" in page.content
    assert f"?q={campaign.pk}".encode() in page.content
    assert batches.status_code == 200
    assert list(batches.context["cl"].result_list) == list(
        CampaignFanout.objects.filter(campaign=campaign).order_by("-pk")
    )


def test_staff_who_may_only_view_batches_cannot_requeue(stuck):
    campaign, dead = stuck
    _, client = staff_with("view_campaignfanout")

    page = client.get(reverse(CHANGELIST))
    client.post(reverse(CHANGELIST), {"action": "requeue", ACTION_CHECKBOX_NAME: [str(dead.pk)]})

    assert page.status_code == 200
    assert b"Requeue the selected dead-lettered batches" not in page.content
    dead.refresh_from_db()
    assert dead.status == WorkStatus.DEAD_LETTERED
    assert drain(campaign_fanout_batch) == 0
    assert Campaign.objects.get(pk=campaign.pk).status == CampaignStatus.SENDING


def test_batches_of_a_canceled_campaign_and_live_batches_are_left_alone(stuck, api, world):
    campaign, dead = stuck
    done = CampaignFanout.objects.filter(campaign=campaign, status=WorkStatus.PROCESSED).first()
    api.post(f"/campaigns/{campaign.pk}/actions/cancel", {}, key=world.keys["project"])
    _, client = staff_with("view_campaignfanout", "change_campaignfanout")

    response = client.post(
        reverse(CHANGELIST),
        {"action": "requeue", ACTION_CHECKBOX_NAME: [str(dead.pk), str(done.pk)]},
        follow=True,
    )

    assert "Requeued 0 batches. (2 left alone" in response.content.decode()
    dead.refresh_from_db()
    assert dead.status == WorkStatus.DEAD_LETTERED
    done.refresh_from_db()
    assert done.status == WorkStatus.PROCESSED


def _database_kwargs() -> dict[str, Any]:
    settings = connection.settings_dict
    return {
        "host": settings["HOST"],
        "port": settings["PORT"],
        "user": settings["USER"],
        "password": settings["PASSWORD"],
        "dbname": settings["NAME"],
    }


@pytest.mark.django_db(transaction=True)
def test_of_two_staff_requeueing_at_once_the_later_requeues_and_records_nothing(stuck):
    campaign, dead = stuck
    user, _ = staff_with("view_campaignfanout", "change_campaignfanout")
    results: list[int] = []
    # The other staff member's requeue, in flight: the batch locked, not yet committed.
    with (
        psycopg.connect(**_database_kwargs()) as other,
        # Activity read outside `other`'s transaction, which would keep its first snapshot.
        psycopg.connect(**_database_kwargs(), autocommit=True) as watcher,
    ):
        other.execute("SELECT id FROM messaging_campaignfanout WHERE id = %s FOR UPDATE", [dead.pk])
        later = threading.Thread(
            target=lambda: results.append(campaign_fanouts_requeue(ids=[dead.pk], user_id=user.pk))
        )
        later.start()
        deadline = time.monotonic() + 10
        while not watcher.execute(
            "SELECT 1 FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone():
            assert time.monotonic() < deadline, "the later requeue never waited for the lock"
            time.sleep(0.05)
        other.execute(
            "UPDATE messaging_campaignfanout SET status = 'accepted', attempts = 0 WHERE id = %s",
            [dead.pk],
        )
    later.join(timeout=10)

    assert results == [0]
    assert not LogEntry.objects.filter(
        object_id=str(campaign.pk), change_message__startswith="Fan-out resumed"
    ).exists()
