"""The delivery policy over a fan-out batch (`BatchHold`) against PostgreSQL: the caps
decide as `CapLedger` does, a message not made is taken back out of the count, and two
transactions racing for a contact's last slot take it once, whether the contact's row
exists or is made by the first."""

import datetime as dt
import random
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import transaction

from config.runtime import clock as service_clock
from contacts.models import Contact
from messaging.models import CampaignFanout, CampaignRecipient, ContactSends, Email
from messaging.services.campaign_fanout import campaign_fanout_batch
from messaging.services.policy import Cap, CapLedger, DeliveryPolicy
from messaging.services.policy_batch import BatchHold
from tests.conftest import Api
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_races import run_in_threads
from tests.messaging.factories_campaigns import audience_with, email_template_id
from tests.messaging.policy_helpers import counted_sends, race
from tests.messaging.test_campaigns_sending import approved, send

HOUR, DAY = dt.timedelta(hours=1), dt.timedelta(days=1)
CAPS = (Cap(channel="email", max=3, per=HOUR), Cap(channel="email", max=5, per=DAY))
# 11:00-13:00 in UTC, the project's zone; 21:00 in Tokyo, outside.
QUIET = (dt.time(11), dt.time(13))


def hold(policy: DeliveryPolicy, contacts: list[Contact], channel: str = "email") -> BatchHold:
    return BatchHold(policy=policy, project_id=contacts[0].project_id, channel=channel)


def stored(contact: Contact, channel: str = "email") -> list[dt.datetime] | None:
    row = ContactSends.objects.filter(contact=contact).first()
    return None if row is None else getattr(row, channel)


@pytest.mark.django_db
def test_a_batch_caps_as_the_ledger_does_and_keeps_what_the_caps_can_count(world, clock):
    policy = DeliveryPolicy(caps=CAPS, quiet=QUIET, zone="UTC")
    now = service_clock.now()
    rng = random.Random(26)
    contacts, before = [], {}
    for n in range(60):
        fields = {"timezone": "Asia/Tokyo"} if n % 3 == 0 else {}
        contact = ContactFactory(project=world.project, fields=fields)
        contacts.append(contact)
        if n % 5 == 0:
            continue  # no row yet
        # Times from 30 hours ago to 3 hours ahead (messages deferred earlier), in order.
        times = sorted(
            now + dt.timedelta(minutes=rng.randrange(-30 * 60, 3 * 60))
            for _ in range(rng.randrange(0, 9))
        )
        ContactSends.objects.create(contact=contact, email=times, push=[now])
        before[contact.pk] = times
    at = {c.pk: policy.quiet_until(now, c.fields) or now for c in contacts}
    assert len(set(at.values())) == 2  # some now, some at the end of the quiet hours
    with transaction.atomic():
        ledger_capped = CapLedger().capped(
            policy=policy, contact_ids=[c.pk for c in contacts], channel="email", at=at
        )
        transaction.set_rollback(True)

    batch = hold(policy, contacts)
    capped = batch.apply((c.pk, c.fields) for c in contacts)
    batch.count(pk for pk in at if pk not in capped)

    assert capped == ledger_capped
    assert 0 < len(capped) < len(contacts)
    assert batch.deferred() == {pk: when for pk, when in at.items() if when != now}
    for contact in contacts:
        old = before.get(contact.pk)
        if contact.pk in capped:
            assert stored(contact) == old
        else:
            kept = sorted(t for t in [*(old or []), at[contact.pk]] if t > now - DAY)
            assert stored(contact) == kept
        assert stored(contact, "push") == ([] if old is None else [now])


@pytest.mark.django_db
def test_a_message_not_made_is_taken_back_out_of_the_count(world, clock):
    policy = DeliveryPolicy(caps=(Cap(channel="push", max=2, per=DAY),))
    now = service_clock.now()
    earlier = now - HOUR
    known, reached, new = (ContactFactory(project=world.project) for _ in range(3))
    ContactSends.objects.create(contact=known, email=[earlier], push=[earlier])
    ContactSends.objects.create(contact=reached, email=[], push=[earlier])

    batch = hold(policy, [known, reached, new], channel="push")
    assert batch.apply((c.pk, c.fields) for c in (known, reached, new)) == set()
    batch.count([reached.pk])

    assert stored(known, "push") == [earlier]
    assert stored(known) == [earlier]
    assert stored(reached, "push") == [earlier, now]
    assert stored(new, "push") == []


def take_once(policy: DeliveryPolicy, contact: Contact) -> Callable[[Callable[[], None]], set]:
    """A fan-out batch of one contact: capped or counted, the message made."""

    def take(pause: Callable[[], None]) -> set:
        with transaction.atomic():
            held = hold(policy, [contact])
            capped = held.apply([(contact.pk, contact.fields)])
            pause()
            held.count([] if capped else [contact.pk])
        return capped

    return take


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("row", ["existing", "made by the first"])
def test_two_batches_racing_for_a_contacts_last_slot_take_it_once(world, row):
    now = service_clock.now()
    contact = ContactFactory(project=world.project)
    if row == "existing":
        ContactSends.objects.create(contact=contact, email=[now - HOUR], push=[])
    policy = DeliveryPolicy(
        caps=(Cap(channel="email", max=2 if row == "existing" else 1, per=DAY),)
    )

    first, second, waited = race(take_once(policy, contact))

    assert waited  # the second batch waited for the first's row
    assert (first, second) == (set(), {contact.pk})
    assert len(stored(contact) or []) == (2 if row == "existing" else 1)


@pytest.mark.django_db(transaction=True)
def test_two_fan_out_workers_of_two_campaigns_to_one_audience_email_each_contact_once(
    world, settings
):
    # Batches of the two campaigns over the same contacts run at once on two workers:
    # each contact's one slot goes to one of them, and no two batches deadlock.
    settings.CAMPAIGN_FANOUT_BATCH_SIZE = 5
    world.project.default_from = "Shop <shop@example.com>"
    world.project.frequency_caps = [{"channel": "email", "max": 1, "per": "P1D"}]
    world.project.save()
    api = Api()
    audience = audience_with(world.project, 30, first_name="Ada")
    template_id = email_template_id(api, world)
    campaigns = [approved(api, world, template_id, audience_id=str(audience.id)) for _ in "ab"]
    for campaign_id in campaigns:
        send(api, world, campaign_id)

    def work(index: int) -> int:
        claimed = 0
        while batch := campaign_fanout_batch():
            claimed += batch
        return claimed

    claimed = run_in_threads(2, work)

    assert sum(claimed) == CampaignFanout.objects.count()
    emailed = Counter(Email.objects.values_list("contact_id", flat=True))
    assert len(emailed) == 30
    assert set(emailed.values()) == {1}
    capped = CampaignRecipient.objects.filter(reason="capped").values_list("contact_id", flat=True)
    assert sorted(capped) == sorted(emailed)
    assert counted_sends() == 30
