"""Frequency caps under concurrency against PostgreSQL: runs of one contact advanced by
two workers at once (real threads, real connections, committed transactions) take the
contact's last slot once."""

import datetime as dt
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import transaction

from automations.models import RunStep
from automations.services.advance import runs_advance_batch
from config.runtime import clock
from contacts.models import Contact
from events.services.processing import events_process_batch
from messaging.models import ContactSends, Email
from messaging.services.policy import CapLedger, policy_of
from tenancy.models import Project
from tests.automations.api_driver import automation, email_template, event
from tests.contacts.test_contacts_races import run_in_threads
from tests.messaging.policy_helpers import counted_sends, race

pytestmark = pytest.mark.django_db(transaction=True)


def send_once(template_id: str) -> dict:
    return {
        "trigger": {"event": "order.completed"},
        "start": "welcome",
        "steps": [
            {"key": "welcome", "type": "send_email", "template_id": template_id, "next": None}
        ],
    }


def test_two_workers_racing_for_a_contacts_last_slot_send_one_message(api, key, world):
    api.patch(
        "/project",
        {"policies": {"frequency_caps": [{"channel": "email", "max": 1, "per": "P1D"}]}},
        key=key,
    )
    automation(api, key, send_once(email_template(api, key)))
    rounds = 5
    for n in range(rounds):
        for _ in range(2):
            event(api, key, "order.completed", email=f"race{n}@example.net")
    while events_process_batch().claimed:
        pass

    # Each worker takes one run per batch: the two runs of a contact are advanced by
    # different workers at the same moment, each in its own transaction.
    def work(index: int) -> int:
        advanced = 0
        while claimed := runs_advance_batch(limit=1).claimed:
            advanced += claimed
        return advanced

    advanced = run_in_threads(2, work)

    assert sum(advanced) == 2 * rounds
    assert Email.objects.count() == rounds
    per_contact = Counter(Email.objects.values_list("contact_id", flat=True))
    assert set(per_contact.values()) == {1}
    outcomes = Counter(RunStep.objects.values_list("outcome", flat=True))
    assert outcomes == {None: rounds, "capped": rounds}
    assert counted_sends() == rounds


def test_the_cap_lock_makes_a_second_transaction_read_the_first_ones_send(world):
    project = Project.objects.get(pk=world.project.pk)
    project.frequency_caps = [{"channel": "push", "max": 1, "per": "PT1H"}]
    project.save(update_fields=["frequency_caps"])
    policy = policy_of(project)
    contact = Contact.objects.create(project=project, email="lock@example.net")
    now = clock.now()

    def take(index: int) -> bool:
        with transaction.atomic():
            ledger = CapLedger()
            room = ledger.room(policy=policy, contact_id=contact.pk, channel="push", at=now)
            if room:
                ledger.count(
                    policy=policy,
                    project_id=project.pk,
                    contact_id=contact.pk,
                    channel="push",
                    at=now,
                )
                ledger.flush()
            return room

    results = run_in_threads(8, take)
    assert sorted(results) == [False] * 7 + [True]
    assert counted_sends() == 1


def test_the_cap_lock_holds_a_contact_whose_row_exists_until_its_send_commits(world):
    # The contact's row exists (an earlier send counted): only the row lock makes the
    # second transaction wait for the first and read its send.
    project = Project.objects.get(pk=world.project.pk)
    project.frequency_caps = [{"channel": "email", "max": 2, "per": "P1D"}]
    project.save(update_fields=["frequency_caps"])
    policy = policy_of(project)
    contact = Contact.objects.create(project=project, email="held@example.net")
    now = clock.now()
    ContactSends.objects.create(contact=contact, email=[now - dt.timedelta(hours=1)], push=[])

    def take(pause: Callable[[], None]) -> bool:
        with transaction.atomic():
            ledger = CapLedger()
            room = ledger.room(policy=policy, contact_id=contact.pk, channel="email", at=now)
            pause()
            if room:
                ledger.count(
                    policy=policy,
                    project_id=project.pk,
                    contact_id=contact.pk,
                    channel="email",
                    at=now,
                )
                ledger.flush()
            return room

    first, second, waited = race(take)

    assert waited
    assert (first, second) == (True, False)
    assert counted_sends() == 2
