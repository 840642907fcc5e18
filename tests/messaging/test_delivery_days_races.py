"""The daily figures under concurrent changes, against PostgreSQL: real threads and
connections through the public tracking pages. Opens and clicks of many emails of one
project on one day meet on one row; each first open and click is counted once, none is
lost, and repeated opens of one email count once."""

import datetime as dt

import pytest
from django.test import Client

from messaging.models import DeliveryDay
from messaging.services.tokens import click_token, open_token
from tests.contacts.test_contacts_races import run_in_threads
from tests.messaging.factories_emails import EmailFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_first_opens_and_clicks_of_many_emails_are_each_counted_once(world, clock):
    emails = [EmailFactory(project=world.project, sent=True) for _ in range(8)]

    def follow(index: int) -> int:
        email = emails[index % len(emails)]
        # Each email is opened twice and clicked once, all at the same time.
        if index < 16:
            return Client().get(f"/t/o/{open_token(email.id)}").status_code
        link = click_token(email.id, "https://example.com/a")
        return Client().get(f"/t/c/{link}").status_code

    statuses = run_in_threads(24, follow)

    assert sorted(set(statuses)) == [200, 302]
    [day] = DeliveryDay.objects.filter(project=world.project)
    assert day.date == dt.date(2026, 1, 1)
    assert (day.opened, day.clicked, day.sent) == (8, 8, 0)
