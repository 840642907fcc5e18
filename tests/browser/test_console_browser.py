"""The staff console as support staff use it, in headless chromium: log in, create a key
and see its secret once, requeue a dead-lettered event, cancel a run from a contact's
timeline, approve a campaign after seeing its rendered preview."""

import datetime as dt
import json
import re
import urllib.request
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.wait import WebDriverWait

from automations.models import RunStatus
from events.models import Event, EventStatus
from messaging.models import CampaignStatus
from tenancy.models import ApiKey
from tests.automations.factories import AutomationRunFactory, RunStepFactory
from tests.contacts.factories import ContactFactory
from tests.factories import ProjectFactory
from tests.messaging.factories_campaigns import CampaignFactory, audience_with

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "console-password-1"


@pytest.fixture
def staff(db: Any) -> Any:
    return get_user_model().objects.create_superuser(
        username="support@example.com", email="support@example.com", password=PASSWORD
    )


def log_in(browser: Any, live_server: Any, staff: Any) -> None:
    browser.get(f"{live_server.url}/admin/login/?next=/admin/")
    browser.find_element(By.NAME, "username").send_keys(staff.username)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    # The login page has the same header: wait for the dashboard itself.
    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "dashboard"))
    assert browser.find_element(By.ID, "site-name").text == "Sendrealm staff console"


def messages(browser: Any) -> str:
    return " ".join(item.text for item in browser.find_elements(By.CSS_SELECTOR, ".messagelist li"))


def test_staff_log_in_and_see_the_dashboard(browser, live_server, staff):
    Event.objects.create(
        project=ProjectFactory(),
        event="order.completed",
        occurred_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        status=EventStatus.DEAD_LETTERED,
        error_code="contact_not_found",
    )

    log_in(browser, live_server, staff)

    queue = browser.find_element(By.CSS_SELECTOR, 'tr.queue[data-queue="events.Event"]')
    assert queue.find_element(By.CSS_SELECTOR, "td.dead-letters").text == "1"
    assert "contact_not_found" in browser.find_element(By.ID, "recent-failures").text


def test_a_new_key_shows_its_secret_once(browser, live_server, staff):
    project = ProjectFactory(name="Shop")
    log_in(browser, live_server, staff)

    browser.get(f"{live_server.url}/admin/tenancy/apikey/add/")
    browser.find_element(By.NAME, "name").send_keys("Checkout backend")
    Select(browser.find_element(By.NAME, "kind")).select_by_value("project")
    browser.find_element(By.NAME, "team").send_keys(str(project.team_id))
    browser.find_element(By.NAME, "project").send_keys(str(project.id))
    browser.find_element(By.NAME, "_save").click()

    shown = messages(browser)
    match = re.search(r"Copy the secret now, it is not shown again: (sr_\S+)", shown)
    assert match, shown
    secret = match.group(1)
    key = ApiKey.objects.get(name="Checkout backend")
    assert secret.startswith(key.prefix)
    # The key works against the API ...
    url, auth = f"{live_server.url}/project", {"Authorization": f"Bearer {secret}"}
    request = urllib.request.Request(url, headers=auth)  # noqa: S310 (loopback)
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (loopback)
        assert json.load(response)["data"]["id"] == str(project.id)
    # ... and its page never shows the secret again.
    browser.get(f"{live_server.url}/admin/tenancy/apikey/{key.pk}/change/")
    assert secret not in browser.page_source
    browser.get(f"{live_server.url}/admin/tenancy/apikey/")
    assert secret not in browser.page_source


def test_a_dead_lettered_event_is_requeued(browser, live_server, staff):
    event = Event.objects.create(
        project=ProjectFactory(),
        event="order.completed",
        email="ada@example.com",
        occurred_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        status=EventStatus.DEAD_LETTERED,
        attempts=8,
        error_code="contact_not_found",
        last_error="No contact",
    )
    log_in(browser, live_server, staff)

    browser.find_element(By.CSS_SELECTOR, 'tr.queue[data-queue="events.Event"] a').click()
    browser.find_element(By.LINK_TEXT, "order.completed").click()
    browser.find_element(By.NAME, "_requeue").click()

    assert "Requeued the event." in messages(browser)
    event.refresh_from_db()
    assert event.status == EventStatus.ACCEPTED
    assert event.attempts == 0


def test_a_run_is_canceled_from_the_contacts_timeline(browser, live_server, staff):
    contact = ContactFactory(email="ada@example.com")
    run = AutomationRunFactory(
        contact=contact, automation__project=contact.project, automation__name="Onboarding"
    )
    run.status = RunStatus.WAITING
    run.save()
    RunStepFactory(run=run)
    log_in(browser, live_server, staff)

    browser.get(f"{live_server.url}/admin/contacts/contact/?q=ada@example.com")
    browser.find_element(By.LINK_TEXT, "ada@example.com").click()
    entry = browser.find_element(By.CSS_SELECTOR, f'tr.timeline-entry[data-key="{run.pk}"]')
    assert "Onboarding" in entry.text
    assert entry.find_element(By.CSS_SELECTOR, "td.status").text == "waiting"
    entry.find_element(By.CSS_SELECTOR, "input.timeline-action").click()

    assert "The run is canceled." in messages(browser)
    entry = browser.find_element(By.CSS_SELECTOR, f'tr.timeline-entry[data-key="{run.pk}"]')
    assert entry.find_element(By.CSS_SELECTOR, "td.status").text == "canceled"
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELED


def test_a_campaign_is_approved_after_its_rendered_preview(browser, live_server, staff):
    project = ProjectFactory(name="Shop")
    campaign = CampaignFactory(
        project=project,
        name="Spring sale",
        in_review=True,
        audience=audience_with(project, 1, first_name="Ada"),
    )
    log_in(browser, live_server, staff)

    # From the dashboard's review queue to the campaign's page.
    section = browser.find_element(By.XPATH, "//h2[text()='Campaigns awaiting review']/..")
    section.find_element(By.LINK_TEXT, "Spring sale").click()
    page = browser.page_source
    assert "Hello Ada" in page
    browser.switch_to.frame(browser.find_element(By.CSS_SELECTOR, "iframe[sandbox]"))
    assert browser.find_element(By.TAG_NAME, "p").text == "Hi Ada"
    browser.switch_to.default_content()

    browser.get(f"{live_server.url}/admin/messaging/campaignawaitingreview/")
    browser.find_element(By.CSS_SELECTOR, f'input.action-select[value="{campaign.pk}"]').click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("approve")
    browser.find_element(By.NAME, "index").click()

    # The answer's message says the action is done (and waits for that page to load).
    assert "Approved “Spring sale” for 1 recipient(s)." in messages(browser)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.APPROVED
    assert campaign.recipient_count == 1
    # It has left the review queue.
    browser.get(f"{live_server.url}/admin/messaging/campaignawaitingreview/")
    assert "Spring sale" not in browser.find_element(By.ID, "content").text
