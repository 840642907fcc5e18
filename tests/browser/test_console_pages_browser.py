"""The console's pages with figures, in headless chromium: the dashboard's charts, a
campaign's review (approved through its button), a sent campaign's funnel, an
automation's per-step funnel and a dead-lettered row. Each leaves a screenshot in
SCREENSHOT_DIR for a person to look at (`SCREENSHOT_DIR=.run/screenshots`)."""

import datetime as dt
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from automations.models import StepEntryCount
from config.console.samples import queue_samples_record
from events.models import Event, EventStatus
from messaging.models import CampaignStatus, DeliveryDay, EmailStatus
from tests.automations.factories import AutomationFactory
from tests.browser.conftest import SCREENSHOT_DIR
from tests.browser.test_console_browser import log_in, messages, staff  # noqa: F401 (fixture)
from tests.factories import ProjectFactory
from tests.messaging.factories_campaigns import CampaignFactory, audience_with
from tests.messaging.factories_emails import EmailFactory

pytestmark = pytest.mark.django_db(transaction=True)


def screenshot(browser: Any, name: str) -> None:
    """The whole page, as tall as it is."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, max(1100, min(int(height) + 40, 6000)))
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT_DIR / f"console_{name}.png"))


def charts(browser: Any) -> dict[str, Any]:
    return {
        chart.find_element(By.TAG_NAME, "title").get_attribute("textContent"): chart
        for chart in browser.find_elements(By.CSS_SELECTOR, "svg.console-chart")
    }


def test_the_dashboard_draws_its_charts(browser, live_server, staff):  # noqa: F811
    project = ProjectFactory(name="Shop")
    today = dt.datetime.now(dt.UTC).date()
    for offset in range(30):
        DeliveryDay.objects.create(
            project=project,
            date=today - dt.timedelta(days=offset),
            channel="email",
            sent=1000 + 37 * (offset % 7),
            delivered=950 + 30 * (offset % 7),
            bounced=20 + offset % 5,
            complained=offset % 3,
            opened=400 + 11 * (offset % 9),
            clicked=90 + 5 * (offset % 4),
        )
    Event.objects.create(
        project=project,
        event="order.completed",
        occurred_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        status=EventStatus.DEAD_LETTERED,
        error_code="contact_not_found",
    )
    queue_samples_record()
    log_in(browser, live_server, staff)

    drawn = charts(browser)
    assert "Emails per day, last 30 days (UTC)" in drawn
    assert "Waiting now, by queue" in drawn
    assert "Dead letters now, by queue" in drawn
    assert "Waiting, last 24 hours (UTC, most per 30 minutes)" in drawn
    # Drawn, not empty: the line of sends has a point per day, inside the picture.
    sent = drawn["Emails per day, last 30 days (UTC)"].find_element(
        By.CSS_SELECTOR, 'g[data-series="Sent"] polyline'
    )
    assert len(sent.get_attribute("points").split()) == 30
    assert sent.size["width"] > 300
    screenshot(browser, "dashboard")


def test_a_campaign_is_approved_with_the_button_on_its_review_page(browser, live_server, staff):  # noqa: F811
    project = ProjectFactory(name="Shop")
    campaign = CampaignFactory(
        project=project,
        name="Autumn sale",
        in_review=True,
        audience=audience_with(project, 2, first_name="Ada"),
    )
    log_in(browser, live_server, staff)

    browser.get(f"{live_server.url}/admin/messaging/campaignawaitingreview/{campaign.pk}/change/")
    review = browser.find_element(By.ID, "campaign-review")
    checks = {
        item.get_attribute("data-check"): item.text
        for item in review.find_elements(By.CSS_SELECTOR, "li.check")
    }
    assert checks["recipients"].startswith("Recipients now: 2")
    assert checks["sender_domain"] == (
        "Sender domain verified: no: its mail may be refused or land in spam"
    )
    assert "App id" not in browser.find_element(By.ID, "content").text
    screenshot(browser, "campaign_review")

    review.find_element(By.CSS_SELECTOR, "#approve-form input[type=submit]").click()

    assert "Approved “Autumn sale” for 2 recipient(s)." in messages(browser)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.APPROVED
    assert campaign.approved_by_id == staff.pk
    assert browser.find_elements(By.ID, "campaign-review") == []


def test_a_sent_campaign_shows_its_funnel(browser, live_server, staff):  # noqa: F811
    project = ProjectFactory(name="Shop")
    campaign = CampaignFactory(project=project, name="Spring sale", sent=True)
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for n in range(20):
        status = EmailStatus.BOUNCED if n == 19 else EmailStatus.DELIVERED
        EmailFactory(
            project=project,
            campaign=campaign,
            status=status,
            opened_at=at if n < 12 else None,
            clicked_at=at if n < 4 else None,
        )
    log_in(browser, live_server, staff)

    browser.get(f"{live_server.url}/admin/messaging/campaign/{campaign.pk}/change/")

    funnel = browser.find_element(By.CSS_SELECTOR, "svg.console-chart-funnel")
    stages = [
        stage.find_element(By.TAG_NAME, "title").get_attribute("textContent")
        for stage in funnel.find_elements(By.CSS_SELECTOR, "g.stage")
    ]
    assert stages == [
        "Recipients: 20 (100% of Recipients)",
        "Sent: 20 (100% of Recipients)",
        "Delivered: 19 (95% of Recipients)",
        "Opened: 12 (60% of Recipients)",
        "Clicked: 4 (20% of Recipients)",
    ]
    assert "App id" not in browser.find_element(By.ID, "content").text
    screenshot(browser, "campaign_funnel")


def test_an_automation_shows_its_step_funnel(browser, live_server, staff):  # noqa: F811
    automation = AutomationFactory(name="Onboarding", published=True)
    version = automation.current_published_version
    assert version is not None
    for step, entered in zip(
        [step["key"] for step in version.definition["steps"]], [500, 320, 120, 80], strict=False
    ):
        StepEntryCount.objects.create(version=version, step_key=step, shard=0, entered=entered)
    log_in(browser, live_server, staff)

    browser.get(f"{live_server.url}/admin/automations/automation/{automation.pk}/change/")

    funnel = browser.find_element(By.CSS_SELECTOR, ".step-funnel svg.console-chart-funnel")
    first = funnel.find_element(By.CSS_SELECTOR, "g.stage title").get_attribute("textContent")
    assert first.endswith(": 500 (100% of " + first.split(":")[0] + ")")
    screenshot(browser, "automation_funnel")


def test_a_dead_lettered_rows_page(browser, live_server, staff):  # noqa: F811
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

    browser.get(f"{live_server.url}/admin/events/deadletteredevent/{event.pk}/change/")

    assert browser.find_element(By.NAME, "_requeue").is_displayed()
    assert "contact_not_found" in browser.find_element(By.ID, "content").text
    screenshot(browser, "dead_lettered_event")
