"""The daily delivery figures behind the dashboard's deliverability chart: each moves when
the email's stamp is set (a send the server accepted, an ESP's delivery, bounce or
complaint, the first open and click), once per email, on the day it happened; the
dashboard reads them, not the emails."""

import datetime as dt
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from messaging.models import DeliveryDay
from messaging.services.delivery import emails_deliver_batch
from messaging.services.delivery_days import delivery_days_count
from messaging.services.engagement import email_click_record, email_open_record
from tests.messaging.esp_server import postmark_stand_in
from tests.messaging.factories_emails import EmailFactory
from tests.messaging.smtp_server import smtp_server_for
from tests.messaging.test_esp_webhooks import (
    SECRET,
    basic_auth,
    delivered_through_postmark,
    postmark_bounce,
    postmark_complaint,
    postmark_delivery,
)

pytestmark = pytest.mark.django_db

FIGURES = ("sent", "delivered", "bounced", "complained", "opened", "clicked")


def figures(project, day):
    row = DeliveryDay.objects.filter(project=project, date=day, channel="email").first()
    return {name: getattr(row, name) if row else 0 for name in FIGURES}


def postmark_post(client, body):
    return client.post(
        "/webhooks/email/postmark",
        json.dumps(body),
        content_type="application/json",
        **basic_auth(SECRET),
    )


@pytest.fixture
def postmark(settings):
    yield from postmark_stand_in(settings, webhook_secret=SECRET)


def test_a_send_the_server_accepted_counts_once_on_its_day(api, world, settings, clock):
    for server in smtp_server_for(settings):
        for address in ("ada@example.net", "bob@example.net"):
            sent = api.post(
                "/emails",
                {"from": "Team <team@example.com>", "to": address, "subject": "Hi", "text": "x"},
                key=world.keys["project"],
            )
            assert sent.status_code == 201, sent.content
        assert emails_deliver_batch() == 2
        assert len(server.received) == 2

    assert figures(world.project, dt.date(2026, 1, 1)) == {**dict.fromkeys(FIGURES, 0), "sent": 2}
    # Nothing left to send: nothing more is counted.
    assert emails_deliver_batch() == 0
    assert figures(world.project, dt.date(2026, 1, 1))["sent"] == 2


def test_esp_reports_count_on_the_day_of_the_event_and_repeats_count_nothing(
    api, world, postmark, client, clock
):
    delivered = delivered_through_postmark(api, world, postmark)
    for body in (
        postmark_delivery(delivered.provider_message_id),
        postmark_delivery(delivered.provider_message_id),
        postmark_bounce(delivered.provider_message_id),
        postmark_complaint(delivered.provider_message_id),
        postmark_complaint(delivered.provider_message_id),
    ):
        assert postmark_post(client, body).status_code == 200

    assert figures(world.project, dt.date(2026, 1, 1)) == {
        "sent": 1,
        "delivered": 1,
        "bounced": 1,
        "complained": 1,
        "opened": 0,
        "clicked": 0,
    }


def test_the_first_open_and_click_count_and_a_click_counts_the_open_it_implies(world, clock):
    at = dt.datetime(2026, 1, 3, 23, 59, tzinfo=dt.UTC)
    read = EmailFactory(project=world.project, sent=True)
    clicked_only = EmailFactory(project=world.project, sent=True)

    email_open_record(email_id=read.id, at=at)
    email_open_record(email_id=read.id, at=at)
    email_click_record(email_id=read.id, url="https://example.com/a", at=at)
    email_click_record(email_id=clicked_only.id, url="https://example.com/a", at=at)
    email_click_record(email_id=clicked_only.id, url="https://example.com/b", at=at)

    assert figures(world.project, dt.date(2026, 1, 3)) == {
        **dict.fromkeys(FIGURES, 0),
        "opened": 2,
        "clicked": 2,
    }


def test_a_day_is_the_utc_day(world):
    late = dt.datetime(2026, 1, 4, 1, 30, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    email = EmailFactory(project=world.project, sent=True)

    email_open_record(email_id=email.id, at=late)

    assert figures(world.project, dt.date(2026, 1, 3))["opened"] == 1


def test_counts_of_several_projects_and_days_are_one_statement(world):
    day = dt.date(2026, 2, 1)
    counts = {
        (day, world.project.id, "email", "sent"): 3,
        (day, world.other_project.id, "email", "sent"): 2,
        (day + dt.timedelta(days=1), world.project.id, "email", "opened"): 1,
    }

    with CaptureQueriesContext(connection) as queries:
        delivery_days_count(counts)
        delivery_days_count(counts)

    assert len(queries) == 2
    assert figures(world.project, day)["sent"] == 6
    assert figures(world.other_project, day)["sent"] == 4
    assert figures(world.project, day + dt.timedelta(days=1))["opened"] == 2


def test_an_unknown_figure_is_refused(world):
    with pytest.raises(ValueError, match="No delivery figure"):
        delivery_days_count({(dt.date(2026, 1, 1), world.project.id, "email", "read"): 1})
