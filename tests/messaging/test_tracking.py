"""Open and click tracking and one-click unsubscribe, end to end: the message is
delivered to a real SMTP server on loopback (aiosmtpd), read as a mail client reads it,
and its pixel, links and unsubscribe link are followed through the public pages."""

from collections.abc import Iterator

import pytest
from django.test import Client

from contacts.topics.models import Subscription, SubscriptionSource, SubscriptionStatus
from events.models import Event
from messaging.models import Email, Suppression, SuppressionReason
from messaging.public.views import PIXEL
from messaging.services.delivery import emails_deliver_batch
from tests.contacts.factories import ContactFactory
from tests.contacts.topics.factories import SubscriptionFactory, TopicFactory
from tests.messaging.factories_suppressions import SuppressionFactory
from tests.messaging.smtp_server import SmtpServer, smtp_server_for
from tests.messaging.tracking_helpers import (
    BASE,
    click_paths,
    html_of,
    parsed,
    pixel_path,
    text_of,
    unsubscribe_path,
)

pytestmark = pytest.mark.django_db

HTML = (
    "<html><head><style>p { color: red; }</style></head><body>"
    "<p>Hello Ada</p>"
    '<p><a href="https://shop.example.com/spring?utm_source=mail&amp;utm_medium=email" '
    'class="button" title="Shop">Shop now</a></p>'
    '<p><a href="http://example.com/plain">Plain http</a></p>'
    '<p><a href="mailto:help@example.com">Write to us</a> or '
    '<a href="tel:+441234567">call</a>, <a href="#top">back to top</a>, '
    '<a href="/relative">relative</a>, '
    f'<a href="{BASE}/u/already-there">unsubscribe</a></p>'
    "</body></html>"
)
SHOP = "https://shop.example.com/spring?utm_source=mail&utm_medium=email"


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    settings.PUBLIC_BASE_URL = BASE
    yield from smtp_server_for(settings)


@pytest.fixture
def browser() -> Client:
    # CSRF checks on, as in a real browser: the unsubscribe POST must not need a token.
    return Client(enforce_csrf_checks=True)


def send(api, world, **overrides) -> Email:
    body = {"from": "Acme News <news@example.com>", "to": "ada@example.net", "subject": "Hi"}
    body["html"] = HTML
    body.update(overrides)
    body = {name: value for name, value in body.items() if value is not None}
    response = api.post("/emails", body, key=world.keys["project"])
    assert response.status_code == 201, response.content
    return Email.objects.get(pk=response.json()["data"]["id"])


def delivered(smtp):
    assert emails_deliver_batch() == 1
    return smtp.received[-1].message


def events(name):
    return list(Event.objects.filter(event=f"sendrealm.mail.{name}").order_by("created_at"))


def base_payload(email, **extra):
    return {"email_id": str(email.id), "contact_id": None, "template_id": None, **extra}


def assert_not_found(response):
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    if response.content:  # a HEAD answer has no body
        assert response.json()["error"]["code"] == "not_found"


# --- the message --------------------------------------------------------------------------


def test_web_links_point_at_the_click_redirect_and_the_pixel_ends_the_body(api, world, smtp):
    send(api, world)

    message = delivered(smtp)

    html = html_of(message)
    links = parsed(html).anchors
    hrefs = [a.href for a in links]
    assert hrefs[0].startswith(f"{BASE}/t/c/")
    assert hrefs[1].startswith(f"{BASE}/t/c/")
    assert hrefs[2:] == [
        "mailto:help@example.com",
        "tel:+441234567",
        "#top",
        "/relative",
        f"{BASE}/u/already-there",
    ]
    assert links[0].attrs["class"] == "button"
    assert links[0].attrs["title"] == "Shop"
    [pixel] = parsed(html).images
    assert pixel["src"].startswith(f"{BASE}/t/o/")
    assert (pixel["width"], pixel["height"], pixel["alt"]) == ("1", "1", "")
    assert html.index("/t/o/") < html.index("</body>")
    # CSS is still inlined around the rewritten links.
    assert 'style="color: red;"' in html


def test_the_text_part_keeps_the_original_links(api, world, smtp):
    send(api, world)

    text = text_of(delivered(smtp))

    assert f"Shop now ({SHOP})" in text
    assert "/t/c/" not in text
    assert "/t/o/" not in text


def test_the_message_offers_one_click_unsubscribe(api, world, smtp):
    send(api, world)

    message = delivered(smtp)

    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert unsubscribe_path(message).startswith("/u/")


def test_with_both_policies_off_the_html_goes_out_as_written(api, world, smtp):
    world.project.track_opens = False
    world.project.track_clicks = False
    world.project.save()
    send(api, world)

    html = html_of(delivered(smtp))

    assert "/t/c/" not in html
    assert "/t/o/" not in html
    assert parsed(html).anchors[0].href == SHOP


def test_with_opens_off_links_are_tracked_but_no_pixel_is_added(api, world, smtp):
    world.project.track_opens = False
    world.project.save()
    send(api, world)

    html = html_of(delivered(smtp))

    assert parsed(html).images == []
    assert parsed(html).anchors[0].href.startswith(f"{BASE}/t/c/")


def test_with_clicks_off_the_pixel_is_added_but_links_stay(api, world, smtp):
    world.project.track_clicks = False
    world.project.save()
    send(api, world)

    message = delivered(smtp)

    assert parsed(html_of(message)).anchors[0].href == SHOP
    assert click_paths(message) == []
    assert pixel_path(message).startswith("/t/o/")


def test_a_text_only_email_gets_no_html_and_no_tracking(api, world, smtp):
    send(api, world, html=None, text=f"Shop at {SHOP}")

    message = delivered(smtp)

    assert message.get_body(("html",)) is None
    assert SHOP in text_of(message)


# --- opens --------------------------------------------------------------------------------


def test_the_pixel_is_a_gif_that_is_never_cached_and_records_the_open(
    api, world, smtp, browser, clock
):
    email = send(api, world)
    message = delivered(smtp)

    response = browser.get(pixel_path(message))

    assert response.status_code == 200
    assert response["Content-Type"] == "image/gif"
    assert response.content == PIXEL
    assert "no-store" in response["Cache-Control"]
    assert "no-cache" in response["Cache-Control"]
    assert response["X-Robots-Tag"] == "noindex, nofollow"
    email.refresh_from_db()
    assert email.opened_at == clock()
    assert email.clicked_at is None
    [event] = events("open")
    assert event.payload == base_payload(email, source="pixel", first=True)


def test_every_open_is_recorded_and_the_first_keeps_its_time(api, world, smtp, browser, clock):
    email = send(api, world)
    path = pixel_path(delivered(smtp))
    first = clock()

    browser.get(path)
    clock.advance(minutes=5)
    browser.get(path)

    email.refresh_from_db()
    assert email.opened_at == first
    assert [e.payload["first"] for e in events("open")] == [True, False]


def test_a_head_request_for_the_pixel_records_nothing(api, world, smtp, browser):
    email = send(api, world)

    response = browser.head(pixel_path(delivered(smtp)))

    assert response.status_code == 200
    assert response["Content-Type"] == "image/gif"
    email.refresh_from_db()
    assert email.opened_at is None
    assert events("open") == []


# --- clicks -------------------------------------------------------------------------------


def test_a_tracked_link_redirects_to_the_original_and_records_the_click(
    api, world, smtp, browser, clock
):
    email = send(api, world)
    shop, plain = click_paths(delivered(smtp))

    response = browser.get(shop)

    assert response.status_code == 302
    assert response["Location"] == SHOP
    assert "no-store" in response["Cache-Control"]
    assert browser.get(plain)["Location"] == "http://example.com/plain"
    email.refresh_from_db()
    assert email.clicked_at == clock()
    assert [e.payload for e in events("click")] == [
        base_payload(email, url=SHOP, source="redirect", first=True),
        base_payload(email, url="http://example.com/plain", source="redirect", first=False),
    ]


def test_a_click_without_an_open_counts_as_the_first_open(api, world, smtp, browser, clock):
    email = send(api, world)
    [shop, _] = click_paths(delivered(smtp))

    browser.get(shop)

    email.refresh_from_db()
    assert email.opened_at == clock()
    [event] = events("open")
    assert event.payload == base_payload(email, source="click", first=True)


def test_a_click_after_an_open_keeps_the_time_of_the_open(api, world, smtp, browser, clock):
    email = send(api, world)
    message = delivered(smtp)
    opened = clock()
    browser.get(pixel_path(message))
    clock.advance(minutes=3)

    browser.get(click_paths(message)[0])

    email.refresh_from_db()
    assert email.opened_at == opened
    assert email.clicked_at == clock()
    assert len(events("open")) == 1


def test_a_head_request_for_a_link_redirects_and_records_nothing(api, world, smtp, browser):
    email = send(api, world)

    response = browser.head(click_paths(delivered(smtp))[0])

    assert response.status_code == 302
    assert response["Location"] == SHOP
    email.refresh_from_db()
    assert email.clicked_at is None
    assert events("click") == []


# --- unsubscribe --------------------------------------------------------------------------


def test_the_unsubscribe_page_asks_to_confirm_and_changes_nothing(api, world, smtp, browser):
    send(api, world)
    path = unsubscribe_path(delivered(smtp))

    response = browser.get(path)

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert '<html lang="en">' in page
    assert f'<form method="post" action="{path}">' in page
    assert '<button type="submit">Unsubscribe</button>' in page
    assert "ada@example.net" in page
    assert "Acme News" in page
    assert not Suppression.objects.exists()
    assert events("unsubscribe") == []


def test_confirming_on_the_page_suppresses_the_address(api, world, smtp, browser):
    email = send(api, world)
    path = unsubscribe_path(delivered(smtp))

    response = browser.post(path)

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert "You are unsubscribed" in response.content.decode()
    entry = Suppression.objects.get(project=world.project)
    assert (entry.email, entry.reason) == ("ada@example.net", SuppressionReason.UNSUBSCRIBE)
    [event] = events("unsubscribe")
    assert event.payload == base_payload(email, topic_id=None, source="link")


def test_a_one_click_post_from_a_mail_client_unsubscribes(api, world, smtp, browser):
    email = send(api, world)
    path = unsubscribe_path(delivered(smtp))

    response = browser.post(
        path, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 200
    assert Suppression.objects.filter(
        project=world.project, email="ada@example.net", reason=SuppressionReason.UNSUBSCRIBE
    ).exists()
    [event] = events("unsubscribe")
    assert event.payload == base_payload(email, topic_id=None, source="one_click")


def test_a_second_unsubscribe_changes_nothing_and_records_nothing(api, world, smtp, browser, clock):
    send(api, world)
    path = unsubscribe_path(delivered(smtp))
    browser.post(
        path, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    entry = Suppression.objects.get()
    clock.advance(hours=1)

    response = browser.post(path)

    assert response.status_code == 200
    assert "already unsubscribed" in response.content.decode()
    assert list(Suppression.objects.all()) == [entry]
    assert Suppression.objects.get().created_at == entry.created_at
    assert len(events("unsubscribe")) == 1


def test_an_address_suppressed_for_another_reason_keeps_it(api, world, smtp, browser):
    send(api, world)
    path = unsubscribe_path(delivered(smtp))
    SuppressionFactory(project=world.project, email="ada@example.net", reason="bounce")

    assert browser.post(path).status_code == 200

    assert Suppression.objects.get().reason == SuppressionReason.BOUNCE
    assert events("unsubscribe") == []


def test_an_email_about_a_topic_takes_its_contact_off_the_topic(api, world, smtp, browser):
    subscription = SubscriptionFactory(
        topic=TopicFactory(project=world.project, name="Newsletter"),
        contact=ContactFactory(project=world.project, email="ada@example.net"),
    )
    email = send(api, world, contact_id=str(subscription.contact_id))
    Email.objects.filter(pk=email.pk).update(topic=subscription.topic)
    path = unsubscribe_path(delivered(smtp))

    assert "<strong>Newsletter</strong>" in browser.get(path).content.decode()
    response = browser.post(
        path, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 200
    assert "<strong>Newsletter</strong>" in response.content.decode()
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.UNSUBSCRIBED
    assert subscription.source == SubscriptionSource.UNSUBSCRIBE_LINK
    assert not Suppression.objects.exists()
    [left] = Event.objects.filter(event="sendrealm.topic.unsubscribed")
    assert left.payload["source"] == "unsubscribe_link"
    [event] = events("unsubscribe")
    assert event.payload == {
        "email_id": str(email.id),
        "contact_id": str(subscription.contact_id),
        "template_id": None,
        "topic_id": str(subscription.topic_id),
        "source": "one_click",
    }
    assert event.contact_id == subscription.contact_id

    browser.post(path)

    assert len(events("unsubscribe")) == 1
    assert Event.objects.filter(event="sendrealm.topic.unsubscribed").count() == 1


def test_a_topic_email_finds_the_contact_by_its_address(api, world, smtp, browser):
    topic = TopicFactory(project=world.project, opt_out=True)
    contact = ContactFactory(project=world.project, email="ada@example.net")
    email = send(api, world)
    Email.objects.filter(pk=email.pk).update(topic=topic)

    browser.post(unsubscribe_path(delivered(smtp)))

    subscription = Subscription.objects.get(topic=topic, contact=contact)
    assert subscription.status == SubscriptionStatus.UNSUBSCRIBED
    assert not Suppression.objects.exists()


def test_a_topic_email_to_an_address_without_a_contact_suppresses_it(api, world, smtp, browser):
    topic = TopicFactory(project=world.project, opt_out=True)
    email = send(api, world)
    Email.objects.filter(pk=email.pk).update(topic=topic)

    browser.post(unsubscribe_path(delivered(smtp)))

    assert Suppression.objects.get().email == "ada@example.net"
    assert not Subscription.objects.exists()


def test_a_contact_not_subscribed_to_the_topic_changes_nothing(api, world, smtp, browser):
    topic = TopicFactory(project=world.project)  # opt-in, and never subscribed
    contact = ContactFactory(project=world.project, email="ada@example.net")
    email = send(api, world, contact_id=str(contact.id))
    Email.objects.filter(pk=email.pk).update(topic=topic)

    response = browser.post(unsubscribe_path(delivered(smtp)))

    assert response.status_code == 200
    assert not Subscription.objects.exists()
    assert not Suppression.objects.exists()
    assert events("unsubscribe") == []


# --- odd input ----------------------------------------------------------------------------


def test_tampered_tokens_are_404_and_change_nothing(api, world, smtp, browser):
    email = send(api, world)
    message = delivered(smtp)
    paths = [pixel_path(message), click_paths(message)[0], unsubscribe_path(message)]

    for path in paths:
        tampered = path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB")
        assert_not_found(browser.get(tampered))
        assert_not_found(browser.head(tampered))
    assert_not_found(browser.post(paths[2][:-3] + "xyz"))
    for prefix in ("/t/o/", "/t/c/", "/u/"):
        assert_not_found(browser.get(prefix + "garbage"))
        assert_not_found(browser.get(prefix + "a:b:c"))
        assert_not_found(browser.get(prefix + "%00%ff"))
    email.refresh_from_db()
    assert email.opened_at is None
    assert email.clicked_at is None
    assert not Event.objects.exclude(event="sendrealm.mail.send").exists()
    assert not Suppression.objects.exists()


def test_a_token_of_one_kind_is_not_accepted_as_another(api, world, smtp, browser):
    send(api, world)
    message = delivered(smtp)
    open_token = pixel_path(message).removeprefix("/t/o/")
    click_token = click_paths(message)[0].removeprefix("/t/c/")
    unsubscribe_token = unsubscribe_path(message).removeprefix("/u/")

    assert_not_found(browser.get(f"/t/c/{open_token}"))
    assert_not_found(browser.get(f"/u/{open_token}"))
    assert_not_found(browser.get(f"/t/o/{click_token}"))
    assert_not_found(browser.post(f"/u/{click_token}"))
    assert_not_found(browser.get(f"/t/o/{unsubscribe_token}"))
    assert_not_found(browser.get(f"/t/c/{unsubscribe_token}"))


def test_links_of_an_email_deleted_since_never_fail_with_a_server_error(api, world, smtp, browser):
    email = send(api, world)
    message = delivered(smtp)
    Email.objects.filter(pk=email.pk).delete()

    pixel = browser.get(pixel_path(message))
    click = browser.get(click_paths(message)[0])

    assert (pixel.status_code, pixel["Content-Type"]) == (200, "image/gif")
    assert (click.status_code, click["Location"]) == (302, SHOP)
    assert_not_found(browser.get(unsubscribe_path(message)))
    assert_not_found(browser.post(unsubscribe_path(message)))
    assert not Event.objects.exclude(event="sendrealm.mail.send").exists()


def test_other_methods_are_405_and_a_trailing_slash_is_404(api, world, smtp, browser):
    send(api, world)
    message = delivered(smtp)
    pixel, click = pixel_path(message), click_paths(message)[0]

    for response in (browser.post(pixel), browser.put(click), browser.delete(click)):
        assert response.status_code == 405
        assert response.json()["error"]["code"] == "method_not_allowed"
    assert browser.post(pixel)["Allow"] == "GET, HEAD"
    assert browser.delete(unsubscribe_path(message)).status_code == 405
    assert_not_found(browser.get(pixel + "/"))
    assert_not_found(browser.get(unsubscribe_path(message) + "/"))


def test_a_one_click_post_with_an_unreadable_body_still_unsubscribes(api, world, smtp, browser):
    send(api, world)
    path = unsubscribe_path(delivered(smtp))

    response = browser.post(
        path, b"--broken\r\nnot multipart", content_type="multipart/form-data; boundary=x"
    )

    assert response.status_code == 200
    assert Suppression.objects.filter(email="ada@example.net").exists()


def test_the_public_pages_are_not_part_of_the_api_document(api):
    paths = api.get("/openapi.json").json()["paths"]

    assert [p for p in paths if p.startswith(("/t/", "/u/"))] == []
