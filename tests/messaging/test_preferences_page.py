"""The preference page `/p/{token}` and the `{{ preferences_url }}` that links it: an email
rendered from a template is delivered to a real SMTP server on loopback, its link is read
as a mail client reads it and the page is used through Django's test client with CSRF
checks on, as a browser would."""

from collections.abc import Iterator

import pytest
from django.test import Client

from contacts.topics.models import Subscription, SubscriptionSource, SubscriptionStatus
from events.models import Event
from messaging.models import Email, Suppression, SuppressionReason
from messaging.public.preferences import CONTENT_SECURITY_POLICY
from messaging.services.delivery import emails_deliver_batch
from messaging.services.tokens import open_token, preferences_token, preferences_url
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_api import assert_error
from tests.contacts.topics.factories import SubscriptionFactory, TopicFactory
from tests.messaging.factories_suppressions import SuppressionFactory
from tests.messaging.smtp_server import SmtpServer, smtp_server_for
from tests.messaging.tracking_helpers import BASE, html_of, parsed, text_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    settings.PUBLIC_BASE_URL = BASE
    yield from smtp_server_for(settings)


@pytest.fixture
def browser() -> Client:
    # CSRF checks on, as in a real browser: the page's form must work without a token.
    return Client(enforce_csrf_checks=True)


@pytest.fixture
def people(world):
    contact = ContactFactory(project=world.project, email="ada@example.com")
    news = TopicFactory(project=world.project, name="Newsletter", description="Once a month")
    updates = TopicFactory(project=world.project, name="Product updates", opt_out=True)
    TopicFactory(project=world.other_project, name="Not this project's")
    return contact, news, updates


def page_of(contact) -> str:
    return f"/p/{preferences_token(contact.id)}"


def topic_events() -> list[tuple[str, str]]:
    return [
        (event.event, event.payload["source"])
        for event in Event.objects.filter(event__startswith="sendrealm.topic.").order_by(
            "created_at"
        )
    ]


def status_of(contact, topic) -> str | None:
    found = Subscription.objects.filter(contact=contact, topic=topic).first()
    return found.status if found else None


def assert_not_found(response):
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    if response.content:  # a HEAD answer has no body
        assert response.json()["error"]["code"] == "not_found"


# --- the link in mail ---------------------------------------------------------------------


def send_with_template(api, world, contact, html: str) -> Email:
    key = world.keys["project"]
    template = api.post(
        "/templates",
        {"name": "Digest", "channel": "email", "subject": "Digest", "html": html},
        key=key,
    ).json()["data"]
    assert api.post(f"/templates/{template['id']}/actions/publish", {}, key=key).status_code == 200
    response = api.post(
        "/emails",
        {
            "from": "Acme <news@example.com>",
            "template_id": template["id"],
            "contact_id": str(contact.id),
        },
        key=key,
    )
    assert response.status_code == 201, response.content
    return Email.objects.get(pk=response.json()["data"]["id"])


def test_a_sent_email_links_the_contacts_preference_page(api, world, people, smtp, browser):
    contact, *_ = people
    html = '<p>Hi</p><p><a href="{{ preferences_url }}">Manage your emails</a></p>'
    send_with_template(api, world, contact, html)

    assert emails_deliver_batch() == 1
    message = smtp.received[-1].message

    [link, *_] = [a.href for a in parsed(html_of(message)).anchors]
    # Our own page: never wrapped in a click redirect.
    assert link == f"{BASE}/p/{preferences_token(contact.id)}" == preferences_url(contact.id)
    assert link in text_of(message)
    page = browser.get(link.removeprefix(BASE))
    assert page.status_code == 200
    assert "Newsletter" in page.content.decode()


def test_a_send_without_a_contact_leaves_preferences_url_undefined(api, world):
    key = world.keys["project"]
    template = api.post(
        "/templates",
        {
            "name": "Receipt",
            "channel": "email",
            "subject": "Receipt",
            "html": "<p>[{{ preferences_url }}]</p>",
        },
        key=key,
    ).json()["data"]
    contact = ContactFactory(project=world.project)

    alone = api.post(f"/templates/{template['id']}/preview", {}, key=key).json()["data"]
    with_contact = api.post(
        f"/templates/{template['id']}/preview", {"contact_id": str(contact.id)}, key=key
    ).json()["data"]

    assert alone["rendered"]["html"] == "<p>[]</p>"
    assert alone["undefined_variables"] == ["preferences_url"]
    assert with_contact["rendered"]["html"] == f"<p>[{preferences_url(contact.id)}]</p>"
    assert with_contact["undefined_variables"] == []


# --- the page -------------------------------------------------------------------------------


def test_the_page_lists_the_projects_topics_with_the_contacts_state(world, people, browser):
    contact, news, updates = people

    response = browser.get(page_of(contact))

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert "ada@example.com" in page
    assert world.project.name in page
    assert f'<form method="post" action="{page_of(contact)}">' in page
    assert f'value="{news.id}" id="topic-{news.id}">' in page  # not ticked
    assert f'value="{updates.id}" id="topic-{updates.id}" checked>' in page
    assert "Once a month" in page
    assert "Not this project's" not in page
    assert 'value="unsubscribe_all"' in page
    # No script, nothing from elsewhere, no cookie.
    assert "<script" not in page
    assert "http://" not in page
    assert "https://" not in page
    assert not response.cookies
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert response["Referrer-Policy"] == "no-referrer"
    assert response["X-Frame-Options"] == "DENY"
    assert "no-store" in response["Cache-Control"]
    assert response["X-Robots-Tag"] == "noindex, nofollow"
    # Looking changes nothing.
    assert not Subscription.objects.exists()
    assert browser.head(page_of(contact)).status_code == 200


def test_saving_the_form_changes_subscriptions_at_once(world, people, browser):
    contact, news, updates = people
    form = {"action": "save", "shown": [str(news.id), str(updates.id)], "topic": [str(news.id)]}

    response = browser.post(page_of(contact), form)

    assert response.status_code == 303
    assert response["Location"] == f"{page_of(contact)}?saved=1"
    assert status_of(contact, news) == SubscriptionStatus.SUBSCRIBED
    assert status_of(contact, updates) == SubscriptionStatus.UNSUBSCRIBED
    source = SubscriptionSource.PREFERENCE_CENTER
    assert topic_events() == [
        ("sendrealm.topic.subscribed", source),
        ("sendrealm.topic.unsubscribed", source),
    ]
    shown = browser.get(response["Location"]).content.decode()
    assert "Your preferences are saved." in shown
    assert f'value="{news.id}" id="topic-{news.id}" checked>' in shown

    # The same form again changes and records nothing.
    assert browser.post(page_of(contact), form).status_code == 303
    assert len(topic_events()) == 2


def test_a_topic_the_page_did_not_show_keeps_its_status(world, people, browser):
    contact, news, updates = people
    later = TopicFactory(project=world.project, name="Made after the page", opt_out=True)
    deleted_id = "0b7c5a52-8a43-4b6f-9d7b-0d2a3c1e9f00"

    form = {"shown": [str(news.id), str(updates.id), deleted_id, "junk"], "topic": [deleted_id]}
    response = browser.post(page_of(contact), form)

    assert response.status_code == 303
    assert status_of(contact, later) is None
    assert status_of(contact, news) == status_of(contact, updates) == "unsubscribed"


def test_unsubscribe_from_all_on_the_page(world, people, browser):
    contact, news, updates = people
    SubscriptionFactory(topic=news, contact=contact)

    response = browser.post(
        page_of(contact), {"action": "unsubscribe_all", "topic": [str(news.id)]}
    )

    assert response.status_code == 303
    assert status_of(contact, news) == status_of(contact, updates) == "unsubscribed"
    entry = Suppression.objects.get(project=world.project)
    assert (entry.email, entry.reason) == ("ada@example.com", SuppressionReason.UNSUBSCRIBE)
    [event] = Event.objects.filter(event="sendrealm.mail.unsubscribe")
    assert event.payload["source"] == SubscriptionSource.PREFERENCE_CENTER
    shown = browser.get(page_of(contact)).content.decode()
    assert "You are unsubscribed from all emails" in shown

    # Ticking a topic again and saving receives it again: the address is sent to again.
    form = {"shown": [str(news.id), str(updates.id)], "topic": [str(news.id)]}
    assert browser.post(page_of(contact), form).status_code == 303
    assert status_of(contact, news) == "subscribed"
    assert not Suppression.objects.exists()


def test_a_bounce_is_not_lifted_from_the_page(world, people, browser):
    contact, news, _ = people
    SuppressionFactory(project=world.project, email="ada@example.com", reason="bounce")

    shown = browser.get(page_of(contact)).content.decode()
    assert "no longer sends email to this address" in shown
    form = {"shown": [str(news.id)], "topic": [str(news.id)]}
    assert browser.post(page_of(contact), form).status_code == 303

    assert status_of(contact, news) == "subscribed"
    assert Suppression.objects.get().reason == "bounce"


def test_a_contact_without_an_address_leaves_its_topics(world, browser):
    contact = ContactFactory(project=world.project, email=None, external_id="device-only")
    topic = TopicFactory(project=world.project, opt_out=True)

    assert browser.get(page_of(contact)).status_code == 200
    response = browser.post(page_of(contact), {"action": "unsubscribe_all"})

    assert response.status_code == 303
    assert status_of(contact, topic) == "unsubscribed"
    assert not Suppression.objects.exists()


def test_tampered_foreign_and_stale_tokens_are_404_and_change_nothing(world, people, browser):
    contact, *_ = people
    path = page_of(contact)
    deleted = ContactFactory(project=world.project)
    deleted_path = page_of(deleted)
    deleted.deleted_at = deleted.created_at
    deleted.save(update_fields=["deleted_at"])

    for bad in (
        path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB"),
        "/p/garbage",
        "/p/a:b:c",
        "/p/%00%ff",
        f"/p/{open_token(contact.id)}",  # a token of another kind
        deleted_path,
    ):
        assert_not_found(browser.get(bad))
        assert_not_found(browser.head(bad))
        assert_not_found(browser.post(bad, {"action": "unsubscribe_all"}))
    assert_not_found(browser.get(path + "/"))
    assert not Subscription.objects.exists()
    assert not Suppression.objects.exists()


def test_a_cross_site_post_is_refused(world, people, browser):
    contact, news, _ = people
    form = {"shown": [str(news.id)], "topic": [str(news.id)]}

    refused = browser.post(page_of(contact), form, headers={"Sec-Fetch-Site": "cross-site"})
    accepted = browser.post(page_of(contact), form, headers={"Sec-Fetch-Site": "same-origin"})

    assert_error(refused, 403, "forbidden")
    assert accepted.status_code == 303
    assert topic_events() == [("sendrealm.topic.subscribed", "preference_center")]


def test_bad_forms_and_methods(world, people, browser):
    contact, *_ = people
    assert_error(browser.post(page_of(contact), {"action": "delete_me"}), 400, "bad_request")
    for method in (browser.put, browser.delete, browser.patch):
        response = method(page_of(contact))
        assert_error(response, 405, "method_not_allowed")
        assert response["Allow"] == "GET, HEAD, POST"
    assert not Subscription.objects.exists()
