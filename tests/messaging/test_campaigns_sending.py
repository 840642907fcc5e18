"""Sending campaigns end to end: created and submitted through the API, approved in the
console, sent with an integration key or prepared and executed with a personal key, the
fan-out drained in-process, the emails delivered to a real SMTP server (aiosmtpd), and
the stats read back through the API. Also: suppression and topics, schedules started by
the beat task on the controllable clock, cancel mid-send, and batches redone after a
worker stopped."""

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
from django.contrib.admin.models import LogEntry
from django.db import IntegrityError, transaction

from config.workqueue.models import WorkStatus
from contacts.topics.models import Subscription, SubscriptionStatus
from messaging.models import (
    Campaign,
    CampaignFanout,
    CampaignRecipient,
    Email,
    EmailStatus,
)
from messaging.services.campaign_fanout import (
    CAMPAIGN_FANOUT_QUEUE,
    CampaignFanoutWork,
    campaign_fanout_batch,
    campaign_fanout_run,
)
from messaging.services.campaigns import campaign_approve
from messaging.services.delivery import CAMPAIGN_CANCELED, emails_deliver_batch
from messaging.tasks import start_scheduled_campaigns, sweep_campaigns
from tests.contacts.audiences.factories import AudienceFactory, AudienceMembershipFactory
from tests.contacts.factories import ContactFactory
from tests.contacts.topics.factories import SubscriptionFactory, TopicFactory
from tests.messaging.factories_campaigns import (
    audience_with,
    console_action,
    email_template_id,
    reviewer,
)
from tests.messaging.factories_suppressions import SuppressionFactory
from tests.messaging.smtp_server import SmtpServer, smtp_server_for

pytestmark = pytest.mark.django_db

STATS = ("queued", "sent", "delivered", "failed", "suppressed")


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


@pytest.fixture
def shop(world):
    world.project.default_from = "Shop <shop@example.com>"
    world.project.save()
    return world


@pytest.fixture
def template_id(api, shop):
    return email_template_id(api, shop)


def fan_out() -> int:
    batches = 0
    while claimed := campaign_fanout_batch():
        batches += claimed
    return batches


def deliver() -> int:
    total = 0
    while claimed := emails_deliver_batch():
        total += claimed
    return total


def emailed_contacts(campaign_id) -> int:
    """How many contacts the campaign emailed, after checking none got two emails."""
    contacts = list(Email.objects.filter(campaign_id=campaign_id).values_list("contact", flat=True))
    assert len(contacts) == len(set(contacts))
    return len(contacts)


def create(api, world, template_id, **target):
    response = api.post(
        "/campaigns",
        {"name": "Spring sale", "template_id": template_id, **target},
        key=world.keys["project"],
    )
    assert response.status_code == 201, response.content
    return response.json()["data"]["id"]


def submit(api, world, campaign_id):
    response = api.post(f"/campaigns/{campaign_id}/actions/submit", {}, key=world.keys["project"])
    assert response.status_code == 200, response.content


def approved(api, world, template_id, **target):
    """A campaign created and submitted through the API and approved by staff."""
    campaign_id = create(api, world, template_id, **target)
    submit(api, world, campaign_id)
    campaign_approve(campaign_id=campaign_id, user_id=reviewer().pk)
    return campaign_id


def send(api, world, campaign_id):
    response = api.post(f"/campaigns/{campaign_id}/actions/send", {}, key=world.keys["project"])
    assert response.status_code == 202, response.content
    return response.json()["data"]


def read(api, world, campaign_id):
    return api.get(f"/campaigns/{campaign_id}", key=world.keys["project"]).json()["data"]


def adds_up(data, recipients):
    stats = data["stats"]
    assert sum(stats[name] for name in STATS) == recipients, stats
    return stats


def test_the_whole_path_from_draft_to_mail_in_the_inbox(api, shop, template_id, smtp, client):
    audience = audience_with(shop.project, 5, first_name="Ada")
    campaign_id = create(api, shop, template_id, audience_id=str(audience.id))
    submit(api, shop, campaign_id)
    staff = reviewer()
    client.force_login(staff)
    assert console_action(client, "approve", [campaign_id], queue=True).status_code == 302

    sending = send(api, shop, campaign_id)

    assert sending["status"] == "sending"
    assert sending["recipient_count"] == 5
    assert fan_out() == 1
    after_fan_out = read(api, shop, campaign_id)
    assert after_fan_out["status"] == "sending"
    assert adds_up(after_fan_out, 5)["queued"] == 5
    assert deliver() == 5
    received = smtp.received
    assert sorted(r.envelope_to[0] for r in received) == sorted(
        m.contact.email for m in audience.memberships.select_related("contact")
    )
    assert {r.message["Subject"] for r in received} == {"Hello Ada"}
    assert all(r.message["From"] == "Shop <shop@example.com>" for r in received)
    done = read(api, shop, campaign_id)
    assert done["status"] == "sent"
    assert done["sent_at"] is not None
    assert adds_up(done, 5) == {
        "queued": 0,
        "sent": 5,
        "delivered": 0,
        "failed": 0,
        "suppressed": 0,
        "opened": 0,
        "clicked": 0,
    }
    messages = [
        entry.get_change_message()
        for entry in LogEntry.objects.filter(object_id=campaign_id).order_by("id")
    ]
    assert messages[0].startswith("Approved with template version 1 for 5 recipient(s)")
    assert messages[1].startswith("Sending started (1 fan-out batch(es)) through the API")


def test_a_personal_key_sends_by_preparing_and_executing(api, shop, template_id, smtp):
    audience = audience_with(shop.project, 2, first_name="Grace")
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    owner = shop.keys["personal_owner"]

    prepared = api.post(
        f"/campaigns/{campaign_id}/actions/send/prepare", {}, key=owner, project=shop.project.id
    ).json()["data"]
    executed = api.post(
        f"/campaigns/{campaign_id}/actions/send/execute",
        {"prepared_action_id": prepared["prepared_action_id"], "idempotency_key": "send-1"},
        key=owner,
        project=shop.project.id,
    )

    assert prepared["effects"]["recipients"] == 2
    assert executed.status_code == 202, executed.content
    assert executed.json()["data"]["status"] == "sending"
    fan_out()
    deliver()
    assert len(smtp.received) == 2
    assert read(api, shop, campaign_id)["status"] == "sent"
    entry = LogEntry.objects.filter(object_id=campaign_id).order_by("id").last()
    assert entry.user == shop.users["owner"]


def test_suppressed_addresses_and_contacts_without_one_are_skipped_and_counted(
    api, shop, template_id, smtp
):
    audience = audience_with(shop.project, 2, first_name="Ada")
    listed = AudienceMembershipFactory(audience=audience).contact
    SuppressionFactory(project=shop.project, email=listed.email)
    AudienceMembershipFactory(audience=audience, contact__email=None, contact__external_id="x1")
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))

    effects_counted = Campaign.objects.get(pk=campaign_id).recipient_count
    send(api, shop, campaign_id)
    fan_out()
    deliver()

    assert effects_counted == 2
    assert len(smtp.received) == 2
    assert listed.email not in {r.envelope_to[0] for r in smtp.received}
    stats = adds_up(read(api, shop, campaign_id), 4)
    assert stats["sent"] == 2
    assert stats["suppressed"] == 2
    reasons = Counter(
        CampaignRecipient.objects.filter(campaign_id=campaign_id).values_list("reason", flat=True)
    )
    # The emailed contacts' rows have no reason.
    assert reasons == {"suppressed": 1, "no_email": 1, "": 2}
    emailed = set(Email.objects.filter(campaign_id=campaign_id).values_list("contact", flat=True))
    assert len(emailed) == 2
    assert listed.pk not in emailed


def test_a_topic_campaign_reaches_only_subscribers_and_its_link_leaves_the_topic(
    api, shop, template_id, smtp, settings
):
    settings.PUBLIC_BASE_URL = "https://mail.example.org"
    topic = TopicFactory(project=shop.project)
    subscribers = [
        SubscriptionFactory(topic=topic, contact__fields={"first_name": "Sub"}).contact
        for _ in range(2)
    ]
    SubscriptionFactory(topic=topic, status=SubscriptionStatus.UNSUBSCRIBED)
    ContactFactory(project=shop.project)
    campaign_id = approved(api, shop, template_id, topic_id=str(topic.id))

    send(api, shop, campaign_id)
    fan_out()
    deliver()

    assert sorted(r.envelope_to[0] for r in smtp.received) == sorted(c.email for c in subscribers)
    assert set(Email.objects.values_list("topic_id", flat=True)) == {topic.id}
    stats = adds_up(read(api, shop, campaign_id), 3)
    assert (stats["sent"], stats["suppressed"]) == (2, 1)
    message = next(r.message for r in smtp.received if r.envelope_to[0] == subscribers[0].email)
    link = str(message["List-Unsubscribe"]).strip("<> ")
    assert api.post(urlparse(link).path).status_code == 200
    assert (
        Subscription.objects.get(topic=topic, contact=subscribers[0]).status
        == SubscriptionStatus.UNSUBSCRIBED
    )
    assert (
        Subscription.objects.get(topic=topic, contact=subscribers[1]).status
        == SubscriptionStatus.SUBSCRIBED
    )


def test_an_opt_out_topic_reaches_everyone_but_those_who_left_it(api, shop, template_id, smtp):
    topic = TopicFactory(project=shop.project, opt_out=True)
    everyone = [ContactFactory(project=shop.project) for _ in range(3)]
    SubscriptionFactory(topic=topic, contact=everyone[0], status=SubscriptionStatus.UNSUBSCRIBED)
    campaign_id = approved(api, shop, template_id, topic_id=str(topic.id))

    send(api, shop, campaign_id)
    fan_out()
    deliver()

    assert sorted(r.envelope_to[0] for r in smtp.received) == sorted(c.email for c in everyone[1:])
    assert adds_up(read(api, shop, campaign_id), 3)["suppressed"] == 1


def test_opens_and_clicks_count_among_the_sent(api, shop, template_id, smtp):
    audience = audience_with(shop.project, 2, first_name="Ada")
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, campaign_id)
    fan_out()
    deliver()
    html = smtp.received[0].message.get_body(("html",)).get_content()
    pixel = re.search(r'src="[^"]*(/t/o/[^"]+)"', html).group(1)
    click = re.search(r'href="[^"]*(/t/c/[^"]+)"', html).group(1)

    assert api.get(pixel).status_code == 200
    assert api.get(click).status_code == 302

    stats = adds_up(read(api, shop, campaign_id), 2)
    assert (stats["sent"], stats["opened"], stats["clicked"]) == (2, 1, 1)


def test_approval_freezes_the_version_that_is_sent(api, shop, template_id, smtp):
    audience = audience_with(shop.project, 1, first_name="Ada")
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    key = shop.keys["project"]
    api.patch(f"/templates/{template_id}", {"subject": "Changed after approval"}, key=key)
    api.post(f"/templates/{template_id}/actions/publish", {}, key=key)

    send(api, shop, campaign_id)
    fan_out()
    deliver()

    assert smtp.received[0].message["Subject"] == "Hello Ada"


def test_a_contact_the_template_cannot_render_for_fails_alone(api, shop, smtp):
    template_id = email_template_id(
        api, shop, subject="Share", html=None, text="{{ 10 | divided_by: contact.fields.n }}"
    )
    audience = AudienceFactory(project=shop.project)
    AudienceMembershipFactory(audience=audience, contact__fields={"n": 2})
    broken = AudienceMembershipFactory(audience=audience, contact__fields={"n": 0}).contact
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))

    send(api, shop, campaign_id)
    fan_out()
    deliver()

    assert len(smtp.received) == 1
    failed = Email.objects.get(contact=broken)
    assert failed.status == EmailStatus.FAILED
    assert "could not be rendered" in failed.last_error
    stats = adds_up(read(api, shop, campaign_id), 2)
    assert (stats["sent"], stats["failed"]) == (1, 1)
    assert read(api, shop, campaign_id)["status"] == "sent"


def test_a_campaign_to_nobody_is_sent_at_once(api, shop, template_id):
    campaign_id = approved(
        api, shop, template_id, audience_id=str(AudienceFactory(project=shop.project).id)
    )

    send(api, shop, campaign_id)
    fan_out()

    data = read(api, shop, campaign_id)
    assert data["status"] == "sent"
    assert data["stats"] == dict.fromkeys(data["stats"], 0)


def test_an_approved_campaign_whose_audience_was_deleted_cannot_be_sent(api, shop, template_id):
    audience = audience_with(shop.project, 1)
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    api.delete(f"/audiences/{audience.id}", key=shop.keys["project"])

    response = api.post(f"/campaigns/{campaign_id}/actions/send", {}, key=shop.keys["project"])

    assert response.status_code == 409
    assert response.json()["error"]["issues"][0]["path"] == "audience_id"
    assert not CampaignFanout.objects.exists()


def test_batches_cut_the_audience_and_run_in_any_order(api, shop, template_id, smtp, settings):
    settings.CAMPAIGN_FANOUT_BATCH_SIZE = 4
    audience = audience_with(shop.project, 10, first_name="Ada")
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))

    send(api, shop, campaign_id)

    batches = list(CampaignFanout.objects.filter(campaign_id=campaign_id).order_by("-position"))
    assert len(batches) == 3
    for batch in batches:
        campaign_fanout_run(campaign=batch.campaign, batch=batch)
    assert emailed_contacts(campaign_id) == 10


# --- schedules -----------------------------------------------------------------------------


def test_a_scheduled_campaign_starts_when_the_beat_task_finds_it_due(
    api, shop, template_id, smtp, clock
):
    audience = audience_with(shop.project, 2, first_name="Ada")
    campaign_id = create(
        api,
        shop,
        template_id,
        audience_id=str(audience.id),
        scheduled_at="2026-01-01T13:00:00Z",
    )
    submit(api, shop, campaign_id)
    campaign_approve(campaign_id=campaign_id, user_id=reviewer().pk)

    scheduled = send(api, shop, campaign_id)

    assert scheduled["status"] == "scheduled"
    assert start_scheduled_campaigns() == 0
    assert not CampaignFanout.objects.exists()

    clock.set(dt.datetime(2026, 1, 1, 13, 0, 1, tzinfo=dt.UTC))
    assert start_scheduled_campaigns() == 1
    assert start_scheduled_campaigns() == 0

    assert read(api, shop, campaign_id)["status"] == "sending"
    fan_out()
    deliver()
    assert len(smtp.received) == 2
    assert read(api, shop, campaign_id)["status"] == "sent"
    assert LogEntry.objects.filter(
        object_id=campaign_id, change_message__startswith="Scheduled send started"
    ).exists()


def test_a_scheduled_campaign_can_be_canceled_before_its_time(api, shop, template_id, clock):
    audience = audience_with(shop.project, 2)
    campaign_id = create(
        api, shop, template_id, audience_id=str(audience.id), scheduled_at="2026-01-02T00:00:00Z"
    )
    submit(api, shop, campaign_id)
    campaign_approve(campaign_id=campaign_id, user_id=reviewer().pk)
    send(api, shop, campaign_id)

    canceled = api.post(f"/campaigns/{campaign_id}/actions/cancel", {}, key=shop.keys["project"])
    clock.set(dt.datetime(2026, 1, 3, tzinfo=dt.UTC))

    assert canceled.status_code == 202
    assert start_scheduled_campaigns() == 0
    assert not Email.objects.exists()


# --- cancel mid-send -----------------------------------------------------------------------


def test_cancel_mid_send_makes_no_new_messages_and_sends_no_queued_one(
    api, shop, template_id, smtp, settings
):
    settings.CAMPAIGN_FANOUT_BATCH_SIZE = 10
    audience = audience_with(shop.project, 30, first_name="Ada")
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, campaign_id)
    assert campaign_fanout_batch() == 1
    settings.EMAIL_CLAIM_BATCH_SIZE = 4
    assert emails_deliver_batch() == 4

    canceled = api.post(f"/campaigns/{campaign_id}/actions/cancel", {}, key=shop.keys["project"])

    assert canceled.status_code == 202
    assert canceled.json()["data"]["status"] == "canceled"
    fan_out()
    deliver()
    assert len(smtp.received) == 4
    assert emailed_contacts(campaign_id) == 10
    unsent = Email.objects.filter(campaign_id=campaign_id, status=EmailStatus.FAILED)
    assert unsent.count() == 6
    assert set(unsent.values_list("last_error", flat=True)) == {CAMPAIGN_CANCELED}
    assert not CampaignFanout.objects.exclude(status=WorkStatus.PROCESSED).exists()
    data = read(api, shop, campaign_id)
    assert data["status"] == "canceled"
    stats = adds_up(data, 10)
    assert (stats["sent"], stats["failed"]) == (4, 6)


def test_a_batch_claimed_before_the_cancel_makes_nothing_after_it(api, shop, template_id, settings):
    settings.CAMPAIGN_FANOUT_BATCH_SIZE = 2
    audience = audience_with(shop.project, 4)
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, campaign_id)
    token, items = CAMPAIGN_FANOUT_QUEUE.claim()

    api.post(f"/campaigns/{campaign_id}/actions/cancel", {}, key=shop.keys["project"])
    CAMPAIGN_FANOUT_QUEUE.run(token=token, items=items, work=CampaignFanoutWork())

    assert not Email.objects.exists()
    assert not CampaignRecipient.objects.exists()


# --- workers that stopped --------------------------------------------------------------------


def test_a_redone_batch_sends_nobody_a_second_message(api, shop, template_id, smtp):
    audience = audience_with(shop.project, 3, first_name="Ada")
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, campaign_id)
    batch = CampaignFanout.objects.select_related("campaign__project").get(campaign_id=campaign_id)
    campaign = Campaign.objects.select_related("project", "template_version").get(pk=campaign_id)

    first = campaign_fanout_run(campaign=campaign, batch=batch)
    again = campaign_fanout_run(campaign=campaign, batch=batch)
    deliver()

    assert first == (3, 0)
    assert again == (0, 0)
    assert Email.objects.count() == 3
    assert emailed_contacts(campaign_id) == 3
    assert Counter(r.envelope_to[0] for r in smtp.received) == Counter(
        m.contact.email for m in audience.memberships.select_related("contact")
    )


def test_a_redone_batch_counts_each_contact_once_though_its_suppression_changed(
    api, shop, template_id, smtp
):
    audience = audience_with(shop.project, 3, first_name="Ada")
    contacts = sorted(
        (m.contact for m in audience.memberships.select_related("contact")), key=lambda c: c.pk
    )
    listed = SuppressionFactory(project=shop.project, email=contacts[0].email)
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, campaign_id)
    batch = CampaignFanout.objects.get(campaign_id=campaign_id)
    campaign = Campaign.objects.select_related("project", "template_version").get(pk=campaign_id)

    first = campaign_fanout_run(campaign=campaign, batch=batch)
    # Between the runs the first address leaves the list and the second joins it.
    listed.delete()
    SuppressionFactory(project=shop.project, email=contacts[1].email)
    again = campaign_fanout_run(campaign=campaign, batch=batch)
    deliver()

    assert first == (2, 1)
    assert again == (0, 0)
    assert emailed_contacts(campaign_id) == 2
    assert contacts[0].email not in {r.envelope_to[0] for r in smtp.received}
    skipped = CampaignRecipient.objects.get(campaign_id=campaign_id, status="suppressed")
    assert skipped.contact_id == contacts[0].pk
    stats = adds_up(read(api, shop, campaign_id), 3)
    assert (stats["sent"], stats["suppressed"]) == (2, 1)


def test_a_second_email_of_a_campaign_to_one_contact_is_refused(api, shop, template_id, smtp):
    audience = audience_with(shop.project, 1, first_name="Ada")
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, campaign_id)
    fan_out()
    email = Email.objects.get(campaign_id=campaign_id)
    recipient = CampaignRecipient.objects.get(campaign_id=campaign_id)
    assert (recipient.contact_id, recipient.status) == (email.contact_id, "queued")

    # The fan-out writes a contact's recipient row with its email: a second one breaks
    # the row's key, and the email written with it goes too.
    with pytest.raises(IntegrityError), transaction.atomic():
        CampaignRecipient.objects.create(
            campaign_id=campaign_id, contact_id=email.contact_id, status="queued"
        )


def test_a_batch_whose_worker_stopped_is_taken_over_when_its_lease_runs_out(
    api, shop, template_id, smtp, clock, settings
):
    settings.CAMPAIGN_FANOUT_LEASE_SECONDS = 60
    audience = audience_with(shop.project, 3, first_name="Ada")
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, campaign_id)
    # A worker claims the batch and stops before working it.
    _, abandoned = CAMPAIGN_FANOUT_QUEUE.claim()
    assert len(abandoned) == 1
    assert campaign_fanout_batch() == 0

    clock.advance(seconds=61)
    assert campaign_fanout_batch() == 1
    deliver()

    assert len(smtp.received) == 3
    assert read(api, shop, campaign_id)["status"] == "sent"
    batch = CampaignFanout.objects.get(campaign_id=campaign_id)
    assert (batch.attempts, batch.messages) == (2, 3)


def test_the_sweep_finishes_a_campaign_whose_last_worker_stopped_before_checking(
    api, shop, template_id, smtp
):
    audience = audience_with(shop.project, 1)
    campaign_id = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, campaign_id)
    fan_out()
    deliver()
    # As if the worker had died between recording the delivery and the check.
    Campaign.objects.filter(pk=campaign_id).update(status="sending", sent_at=None)

    sweep_campaigns()

    assert read(api, shop, campaign_id)["status"] == "sent"


@pytest.mark.parametrize("opt_out", [False, True], ids=["opt-in", "opt-out"])
def test_topic_batches_cut_by_contact_id_reach_each_subscriber_once(
    api, shop, template_id, settings, opt_out
):
    settings.CAMPAIGN_FANOUT_BATCH_SIZE = 2
    topic = TopicFactory(project=shop.project, opt_out=opt_out)
    subscribers = [SubscriptionFactory(topic=topic).contact for _ in range(5)]
    left = SubscriptionFactory(topic=topic, status=SubscriptionStatus.UNSUBSCRIBED).contact
    ContactFactory(project=shop.project)
    campaign_id = approved(api, shop, template_id, topic_id=str(topic.id))

    send(api, shop, campaign_id)
    fan_out()

    emailed = Counter(
        Email.objects.filter(campaign_id=campaign_id).values_list("contact_id", flat=True)
    )
    everyone_else = 1 if opt_out else 0
    assert len(emailed) == 5 + everyone_else
    assert set(emailed.values()) == {1}
    assert {c.pk for c in subscribers} <= set(emailed)
    assert left.pk not in emailed
    assert CampaignFanout.objects.filter(campaign_id=campaign_id).count() > 2
