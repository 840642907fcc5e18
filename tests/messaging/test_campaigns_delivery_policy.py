"""Campaigns under the delivery policy, end to end: created and submitted through the API,
approved by staff, sent, the fan-out drained in-process and the emails delivered to a
real SMTP server, on the controllable clock. Caps skip a recipient (`capped`), quiet
hours hold its email until they end (its delivery job's not-before time), and a
transactional campaign passes both."""

from collections.abc import Iterator

import pytest

from messaging.models import CampaignRecipient, Email, EmailDelivery
from messaging.services.campaigns import campaign_approve
from messaging.tasks import sweep_campaigns
from tests.automations.api_driver import automation, drain, email_template, event
from tests.contacts.audiences.factories import AudienceMembershipFactory
from tests.contacts.factories import ContactFactory
from tests.messaging.factories_campaigns import audience_with, email_template_id, reviewer
from tests.messaging.policy_helpers import counted_sends
from tests.messaging.smtp_server import SmtpServer, smtp_server_for
from tests.messaging.test_campaigns_sending import approved, deliver, fan_out, read, send

pytestmark = pytest.mark.django_db


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


def policies(api, world, **values):
    response = api.patch("/project", {"policies": values}, key=world.keys["project"])
    assert response.status_code == 200, response.json()


def test_a_capped_recipient_is_skipped_and_a_transactional_campaign_is_not(
    api, shop, template_id, smtp, clock
):
    policies(api, shop, frequency_caps=[{"channel": "email", "max": 1, "per": "P1D"}])
    audience = audience_with(shop.project, 3, first_name="Ada")

    first = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, first)
    fan_out()
    deliver()
    assert len(smtp.received) == 3

    clock.advance(hours=1)
    second = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, second)
    fan_out()
    deliver()
    assert len(smtp.received) == 3
    assert Email.objects.filter(campaign_id=second).count() == 0
    reasons = set(
        CampaignRecipient.objects.filter(campaign_id=second).values_list("reason", flat=True)
    )
    assert reasons == {"capped"}
    sweep_campaigns()
    done = read(api, shop, second)
    assert done["status"] == "sent"
    assert done["stats"]["suppressed"] == 3

    response = api.post(
        "/campaigns",
        {
            "name": "Password policy change",
            "template_id": template_id,
            "audience_id": str(audience.id),
            "transactional": True,
        },
        key=shop.keys["project"],
    )
    assert response.status_code == 201, response.content
    assert response.json()["data"]["transactional"] is True
    third = response.json()["data"]["id"]
    submitted = api.post(f"/campaigns/{third}/actions/submit", {}, key=shop.keys["project"])
    assert submitted.status_code == 200
    campaign_approve(campaign_id=third, user_id=reviewer().pk)
    send(api, shop, third)
    fan_out()
    deliver()
    assert len(smtp.received) == 6
    # Only the capped campaign's messages were counted.
    assert counted_sends() == 3


def test_caps_count_automation_and_campaign_messages_together(api, shop, template_id, smtp, clock):
    policies(api, shop, frequency_caps=[{"channel": "email", "max": 2, "per": "PT12H"}])
    audience = audience_with(shop.project, 2, first_name="Ada")
    busy = audience.memberships.order_by("contact_id").first().contact
    # An automation's email to one of them first.
    key = shop.keys["project"]
    automation(
        api,
        key,
        {
            "trigger": {"event": "order.completed"},
            "start": "welcome",
            "steps": [
                {
                    "key": "welcome",
                    "type": "send_email",
                    "template_id": email_template(api, key),
                    "next": None,
                }
            ],
        },
    )
    event(api, key, "order.completed", email=busy.email)
    drain()
    assert len(smtp.received) == 1
    clock.advance(minutes=5)
    campaign = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, campaign)
    fan_out()
    deliver()
    # One email in the window: room for one more each.
    assert len(smtp.received) == 3

    clock.advance(minutes=5)
    again = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, again)
    fan_out()
    deliver()
    assert len(smtp.received) == 4
    capped = CampaignRecipient.objects.get(campaign_id=again, reason="capped")
    assert capped.contact_id == busy.pk


def test_quiet_hours_hold_a_campaign_email_until_they_end_in_each_contacts_zone(
    api, shop, template_id, smtp, clock
):
    # 12:00 UTC: inside 11:00-13:00 in UTC, 21:00 in Tokyo (outside).
    policies(api, shop, quiet_hours={"start": "11:00", "end": "13:00"})
    audience = audience_with(shop.project, 2, first_name="Ada")
    tokyo = ContactFactory(project=shop.project, fields={"timezone": "Asia/Tokyo"})
    AudienceMembershipFactory(audience=audience, contact=tokyo)

    campaign = approved(api, shop, template_id, audience_id=str(audience.id))
    send(api, shop, campaign)
    fan_out()
    deliver()
    assert [record.envelope_to[0] for record in smtp.received] == [tokyo.email]
    held = EmailDelivery.objects.exclude(email__contact=tokyo)
    assert {job.next_attempt_at.isoformat() for job in held} == {"2026-01-01T13:00:00+00:00"}
    sweep_campaigns()
    waiting = read(api, shop, campaign)
    assert waiting["status"] == "sending"
    assert waiting["stats"]["queued"] == 2

    clock.advance(minutes=59, seconds=59)
    assert deliver() == 0
    clock.advance(seconds=1)
    assert deliver() == 2
    assert len(smtp.received) == 3
    sweep_campaigns()
    assert read(api, shop, campaign)["status"] == "sent"
