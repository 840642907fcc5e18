"""The preference page as a contact uses it on a phone, in headless chromium: 390 px wide,
no horizontal scrolling, a topic ticked and saved, then "unsubscribe from all". The page's
Content-Security-Policy forbids every script, so the form is shown to work without
JavaScript. A screenshot of the page at that width is kept in SCREENSHOT_DIR."""

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from contacts.topics.models import Subscription, SubscriptionStatus
from messaging.models import Suppression, SuppressionReason
from messaging.services.tokens import preferences_token
from tests.browser.conftest import SCREENSHOT_DIR
from tests.contacts.factories import ContactFactory
from tests.contacts.topics.factories import TopicFactory
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)

PHONE_WIDTH, PHONE_HEIGHT = 390, 844


def status_of(contact: Any, topic: Any) -> str | None:
    found = Subscription.objects.filter(contact=contact, topic=topic).first()
    return found.status if found else None


def test_a_contact_changes_its_topics_on_a_phone(browser, live_server):
    project = ProjectFactory(name="Acme Outdoor Supplies")
    contact = ContactFactory(project=project, email="ada.lovelace.long.address@example.com")
    news = TopicFactory(
        project=project, name="Newsletter", description="The best of the month, once a month."
    )
    updates = TopicFactory(
        project=project,
        name="Product updates",
        description="New gear and restocks as they land.",
        opt_out=True,
    )
    TopicFactory(project=project, name="Offers", description="Sales, a few times a year.")
    browser.set_window_size(PHONE_WIDTH, PHONE_HEIGHT)
    page = f"{live_server.url}/p/{preferences_token(contact.id)}"

    browser.get(page)

    assert browser.execute_script("return window.innerWidth") == PHONE_WIDTH
    # Nothing wider than the screen: no sideways scrolling on a phone.
    assert browser.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth"
    )
    assert browser.find_element(By.TAG_NAME, "h1").text == "Email preferences"
    news_box = browser.find_element(By.ID, f"topic-{news.id}")
    updates_box = browser.find_element(By.ID, f"topic-{updates.id}")
    assert (news_box.is_selected(), updates_box.is_selected()) == (False, True)
    save = browser.find_element(By.CSS_SELECTOR, 'button[value="save"]')
    leave = browser.find_element(By.CSS_SELECTOR, 'button[value="unsubscribe_all"]')
    for button in (save, leave):
        assert button.is_displayed()
        assert button.size["height"] >= 44  # a comfortable tap target
        assert button.location["x"] + button.size["width"] <= PHONE_WIDTH
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT_DIR / "preference-page-390px.png"))

    # Tap the topic's label (the whole row), untick another, save.
    browser.find_element(By.CSS_SELECTOR, f'label[for="topic-{news.id}"]').click()
    updates_box.click()
    save.click()

    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "saved"))
    assert browser.current_url == f"{page}?saved=1"
    assert status_of(contact, news) == SubscriptionStatus.SUBSCRIBED
    assert status_of(contact, updates) == SubscriptionStatus.UNSUBSCRIBED
    assert browser.find_element(By.ID, f"topic-{news.id}").is_selected()
    assert not browser.find_element(By.ID, f"topic-{updates.id}").is_selected()

    browser.find_element(By.CSS_SELECTOR, 'button[value="unsubscribe_all"]').click()

    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "unsubscribed-all"))
    assert status_of(contact, news) == SubscriptionStatus.UNSUBSCRIBED
    entry = Suppression.objects.get(project=project)
    assert (entry.email, entry.reason) == (contact.email, SuppressionReason.UNSUBSCRIBE)
    assert not any(
        box.is_selected() for box in browser.find_elements(By.CSS_SELECTOR, "input[type=checkbox]")
    )
