"""The staff console's automation pages: versions on the automation, the definition on a
version, the timeline and waits on a run; all read-only."""

import pytest
from django.test import Client

from automations.models import Automation, AutomationRun, AutomationVersion
from tests.automations.factories import (
    AutomationFactory,
    AutomationRunFactory,
    AutomationVersionFactory,
    RunStepFactory,
    RunWaitFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


@pytest.fixture
def run(world):
    automation = AutomationFactory(project=world.project, published=True, name="Welcome flow")
    AutomationVersionFactory(automation=automation)
    run = AutomationRunFactory(automation=automation, waiting=True, last_error="Slow SMTP")
    RunStepFactory(run=run, step_key="pause")
    RunWaitFactory(run=run, step_key="pause", event="review.submitted")
    return run


@pytest.mark.parametrize(
    "path",
    [
        "/admin/automations/automation/",
        "/admin/automations/automationversion/",
        "/admin/automations/automationrun/",
        "/admin/automations/automationrun/?status__exact=waiting",
    ],
)
def test_changelists_render(staff, run, path):
    assert staff.get(path).status_code == 200


def test_the_automation_page_lists_its_versions(staff, run):
    page = staff.get(f"/admin/automations/automation/{run.automation_id}/change/")

    assert page.status_code == 200
    body = page.content.decode()
    assert "Welcome flow" in body
    assert "published" in body
    assert "draft" in body


def test_a_version_page_shows_its_definition(staff, run):
    version = run.automation.current_published_version

    page = staff.get(f"/admin/automations/automationversion/{version.id}/change/")

    assert page.status_code == 200
    assert "order.completed" in page.content.decode()


def test_a_run_page_shows_its_steps_and_waits(staff, run):
    page = staff.get(f"/admin/automations/automationrun/{run.id}/change/")

    assert page.status_code == 200
    body = page.content.decode()
    assert "review.submitted" in body
    assert "Slow SMTP" in body
    assert "order_id" in body


@pytest.mark.parametrize("model", [Automation, AutomationVersion, AutomationRun])
def test_nothing_can_be_added_changed_or_deleted(staff, model, run):
    admin_site_model = model._meta.model_name

    assert staff.get(f"/admin/automations/{admin_site_model}/add/").status_code == 403
