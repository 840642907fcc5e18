import datetime as dt

import pytest
from django.test import Client

from messaging.models import EmailDelivery
from tests.contacts.topics.factories import TopicFactory
from tests.messaging.factories_emails import CapturedMessageFactory, EmailFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_an_email_page_shows_its_timeline_and_delivery(staff, world):
    sent_at = dt.datetime(2026, 3, 1, 9, 30, tzinfo=dt.UTC)
    email = EmailFactory(project=world.project, sent=True, sent_at=sent_at)
    EmailDelivery.objects.create(email=email, status="processed", attempts=2)

    page = staff.get(f"/admin/messaging/email/{email.id}/change/")

    assert page.status_code == 200
    content = page.content.decode()
    assert "<li>created:" in content
    assert "<li>sent:" in content
    assert "<li>opened:" not in content
    assert "processed after 2 attempt(s)" in content


def test_an_email_shows_when_it_was_opened_and_clicked_and_its_topic(staff, world):
    opened_at = dt.datetime(2026, 3, 1, 10, 0, tzinfo=dt.UTC)
    topic = TopicFactory(project=world.project, name="Newsletter")
    email = EmailFactory(
        project=world.project,
        sent=True,
        opened_at=opened_at,
        clicked_at=opened_at + dt.timedelta(minutes=2),
        topic=topic,
    )

    page = staff.get(f"/admin/messaging/email/{email.id}/change/").content.decode()
    listing = staff.get("/admin/messaging/email/").content.decode()

    assert "<li>opened:" in page
    assert "<li>clicked:" in page
    assert "Newsletter" in page
    assert "column-opened_at" in listing
    assert "column-clicked_at" in listing


def test_the_email_list_is_searched_by_message_id(staff, world):
    email = EmailFactory(project=world.project)
    EmailFactory(project=world.project)

    response = staff.get("/admin/messaging/email/", {"q": email.message_id})

    assert list(response.context["cl"].result_list) == [email]


def test_a_captured_message_previews_its_html_in_a_sandboxed_frame(staff):
    captured = CapturedMessageFactory()

    page = staff.get(f"/admin/messaging/capturedmessage/{captured.id}/change/")

    assert page.status_code == 200
    content = page.content.decode()
    assert '<iframe sandbox="" srcdoc="&lt;p onclick=&quot;x()&quot;&gt;Hello' in content
    assert '<p onclick="x()">' not in content
    assert "<pre>Hello" in content
    assert "<th>X-Email-Id</th>" in content
