"""Push campaigns end to end: a push template, an app with FCM and APNs providers, the
campaign drafted and submitted through the API, approved in the console, sent, its
fan-out drained in-process and its deliveries sent to the loopback stand-ins of FCM and
APNs; then the stats, opens, contacts without a device, and cancel mid-send."""

import json
from collections.abc import Iterator

import pytest

from bench import keys
from bench.standins import ApnsStandin, FcmStandin
from messaging.models import CampaignRecipient
from messaging.services.campaign_fanout import campaign_fanout_batch
from pushproviders.models import PushDelivery, PushMessage
from pushproviders.services.delivery import CAMPAIGN_CANCELED, push_deliver_batch
from tests.contacts.audiences.factories import AudienceFactory, AudienceMembershipFactory
from tests.messaging.factories_campaigns import console_action, reviewer
from tests.pushproviders.sending import (
    APNS_BUNDLE_ID,
    APNS_KEY_ID,
    APNS_TEAM_ID,
    PushWorld,
    push_world,
)

pytestmark = pytest.mark.django_db

STATS = ("queued", "sent", "delivered", "failed", "suppressed")


@pytest.fixture
def fcm() -> Iterator[FcmStandin]:
    with FcmStandin(account=keys.service_account()) as server:
        yield server


@pytest.fixture
def apns() -> Iterator[ApnsStandin]:
    with ApnsStandin(
        private_key_pem=keys.apns_p8(),
        key_id=APNS_KEY_ID,
        team_id=APNS_TEAM_ID,
        bundle_id=APNS_BUNDLE_ID,
    ) as server:
        yield server


@pytest.fixture
def push(api, world, settings, fcm, apns, clock) -> PushWorld:
    settings.PUSH_ALLOW_HTTP = True
    settings.PUSH_FCM_BASE_URL = fcm.url
    settings.PUSH_APNS_BASE_URL = apns.url
    push = push_world(api, world)
    push.fcm(keys.service_account(token_uri=fcm.token_uri))
    push.apns()
    return push


@pytest.fixture
def template_id(push) -> str:
    key = push.key
    created = push.api.post(
        "/templates",
        {
            "name": "Flash sale",
            "channel": "push",
            "title": "Hi {{ contact.fields.first_name }}",
            "body": "Everything is half price today",
            "data": {"screen": "sale"},
        },
        key=key,
    )
    assert created.status_code == 201, created.content
    template_id = created.json()["data"]["id"]
    assert (
        push.api.post(f"/templates/{template_id}/actions/publish", {}, key=key).status_code == 200
    )
    return str(template_id)


@pytest.fixture
def audience(push):
    """Three contacts: one with an Android phone, one with an iPhone, one with no device."""
    audience = AudienceFactory(project=push.world.project)
    android = AudienceMembershipFactory(audience=audience, contact__fields={"first_name": "Ada"})
    iphone = AudienceMembershipFactory(audience=audience, contact__fields={"first_name": "Grace"})
    AudienceMembershipFactory(audience=audience, contact__fields={"first_name": "Nobody"})
    push.install(android.contact, "fcm", "fcm-token-ada:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx")
    push.install(iphone.contact, "apns", "b2" * 32)
    return audience


def approved_campaign(push, client, template_id, audience) -> str:
    api, key = push.api, push.key
    created = api.post(
        "/push-campaigns",
        {
            "name": "Flash sale",
            "template_id": template_id,
            "audience_id": str(audience.id),
            "app_id": push.app.public_id,
        },
        key=key,
    )
    assert created.status_code == 201, created.content
    campaign_id = created.json()["data"]["id"]
    submitted = api.post(f"/push-campaigns/{campaign_id}/actions/submit", {}, key=key)
    assert submitted.status_code == 200, submitted.content
    client.force_login(reviewer())
    assert console_action(client, "approve", [campaign_id], queue=True).status_code == 302
    return str(campaign_id)


def send(push, campaign_id):
    response = push.api.post(f"/push-campaigns/{campaign_id}/actions/send", {}, key=push.key)
    assert response.status_code == 202, response.content
    return response.json()["data"]


def read(push, campaign_id):
    return push.api.get(f"/push-campaigns/{campaign_id}", key=push.key).json()["data"]


def test_a_push_campaign_reaches_every_device_of_its_audience(
    push, client, template_id, audience, fcm, apns
):
    campaign_id = approved_campaign(push, client, template_id, audience)
    assert read(push, campaign_id)["recipient_count"] == 3

    assert send(push, campaign_id)["status"] == "sending"
    assert campaign_fanout_batch() == 1
    queued = read(push, campaign_id)
    assert queued["stats"]["queued"] == 2
    assert queued["stats"]["suppressed"] == 1
    assert push_deliver_batch() == 2

    assert len(fcm.messages) == 1
    assert fcm.messages[0]["notification"] == {
        "title": "Hi Ada",
        "body": "Everything is half price today",
    }
    assert fcm.messages[0]["data"] == {"screen": "sale"}
    assert len(apns.delivered) == 1
    assert json.loads(apns.delivered[0].body)["aps"]["alert"]["title"] == "Hi Grace"
    done = read(push, campaign_id)
    assert done["status"] == "sent"
    stats = done["stats"]
    assert sum(stats[name] for name in STATS) == 3
    assert (stats["sent"], stats["suppressed"], stats["queued"]) == (2, 1, 0)
    assert PushMessage.objects.filter(campaign_id=campaign_id).count() == 2
    assert (
        CampaignRecipient.objects.get(
            campaign_id=campaign_id, reason="no_installation"
        ).contact.fields["first_name"]
        == "Nobody"
    )


def test_an_open_reported_by_a_device_counts_in_the_stats(
    push, client, template_id, audience, fcm, apns
):
    campaign_id = approved_campaign(push, client, template_id, audience)
    send(push, campaign_id)
    campaign_fanout_batch()
    push_deliver_batch()
    delivery = PushDelivery.objects.filter(message__campaign_id=campaign_id).first()

    opened = push.api.post(
        f"/push/messages/{delivery.message_id}/open",
        {"installation_id": str(delivery.installation_id)},
        key=push.key,
    )

    assert opened.status_code == 200, opened.content
    assert read(push, campaign_id)["stats"]["opened"] == 1


def test_cancel_mid_send_keeps_queued_notifications_from_the_devices(
    push, client, template_id, audience, fcm, apns
):
    campaign_id = approved_campaign(push, client, template_id, audience)
    send(push, campaign_id)
    campaign_fanout_batch()

    canceled = push.api.post(f"/push-campaigns/{campaign_id}/actions/cancel", {}, key=push.key)
    assert canceled.status_code == 202
    assert push_deliver_batch() == 2

    assert fcm.messages == []
    assert apns.delivered == []
    errors = set(
        PushDelivery.objects.filter(message__campaign_id=campaign_id).values_list("error", "state")
    )
    assert errors == {(CAMPAIGN_CANCELED, "failed")}
    data = read(push, campaign_id)
    assert data["status"] == "canceled"
    assert (data["stats"]["failed"], data["stats"]["suppressed"]) == (2, 1)


def test_a_push_campaign_is_not_found_under_campaigns(push, client, template_id, audience):
    campaign_id = approved_campaign(push, client, template_id, audience)

    response = push.api.post(f"/campaigns/{campaign_id}/actions/send", {}, key=push.key)

    assert response.status_code == 404
    assert read(push, campaign_id)["status"] == "approved"


def test_push_campaigns_wait_for_quiet_hours_to_end_and_skip_capped_contacts(
    push, client, template_id, audience, fcm, apns, clock
):
    policy = {
        "frequency_caps": [{"channel": "push", "max": 1, "per": "P1D"}],
        # 12:00 UTC: inside in UTC; 21:00 in Tokyo, where Grace lives, is outside.
        "quiet_hours": {"start": "11:00", "end": "13:00"},
    }
    assert push.api.patch("/project", {"policies": policy}, key=push.key).status_code == 200
    grace = audience.memberships.get(contact__fields__first_name="Grace").contact
    grace.fields = {**grace.fields, "timezone": "Asia/Tokyo"}
    grace.save(update_fields=["fields"])

    first = approved_campaign(push, client, template_id, audience)
    send(push, first)
    assert campaign_fanout_batch() == 1
    assert push_deliver_batch() == 1
    assert (len(fcm.messages), len(apns.delivered)) == (0, 1)
    held = PushDelivery.objects.get(platform="fcm")
    assert held.next_attempt_at.isoformat() == "2026-01-01T13:00:00+00:00"

    clock.advance(hours=1)
    assert push_deliver_batch() == 1
    assert (len(fcm.messages), len(apns.delivered)) == (1, 1)

    second = approved_campaign(push, client, template_id, audience)
    send(push, second)
    assert campaign_fanout_batch() == 1
    assert push_deliver_batch() == 0
    reasons = sorted(
        CampaignRecipient.objects.filter(campaign_id=second).values_list("reason", flat=True)
    )
    assert reasons == ["capped", "capped", "no_installation"]
    assert read(push, second)["stats"]["suppressed"] == 3


def test_push_send_and_push_tests_bypass_caps_and_quiet_hours(push, audience, fcm):
    policy = {
        "frequency_caps": [{"channel": "push", "max": 1, "per": "P1D"}],
        "quiet_hours": {"start": "00:00", "end": "23:59"},
    }
    assert push.api.patch("/project", {"policies": policy}, key=push.key).status_code == 200
    ada = audience.memberships.get(contact__fields__first_name="Ada").contact
    for n in range(2):
        response = push.send({"contact_id": str(ada.id), "title": f"Receipt {n}", "body": "Paid"})
        assert response.status_code == 202, response.content
    installation = PushDelivery.objects.filter(message__contact_id=ada.id).first().installation
    tested = push.api.post("/push/tests", {"installation_id": str(installation.id)}, key=push.key)
    assert tested.status_code == 202, tested.content
    while push_deliver_batch():
        pass
    assert len(fcm.messages) == 3
