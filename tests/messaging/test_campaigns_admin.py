"""The review console: the queue, the change page with the rendered message, approve and
reject for staff holding `approve_campaign` (and nobody else), and the history."""

import html

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from messaging.admin.campaigns import CampaignAdmin
from messaging.models import Campaign, CampaignStatus
from tests.messaging.factories_campaigns import (
    CampaignFactory,
    audience_with,
    console_action,
    reviewer,
)
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(world):
    audience = audience_with(world.project, 3, first_name="Ada")
    return CampaignFactory(project=world.project, audience=audience, in_review=True)


@pytest.fixture
def approver(client):
    user = reviewer()
    client.force_login(user)
    return user


@pytest.fixture
def onlooker(client):
    user = reviewer(may_approve=False, username="onlooker@example.com")
    client.force_login(user)
    return user


def history(campaign):
    return list(LogEntry.objects.filter(object_id=str(campaign.pk)).order_by("action_time", "id"))


def test_a_reviewer_approves_from_the_queue_and_the_version_and_count_are_frozen(
    client, approver, campaign, api, world, clock
):
    published = campaign.template.versions.get(state="published")

    response = console_action(client, "approve", [campaign.pk], queue=True)

    assert response.status_code == 302
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.APPROVED
    assert campaign.template_version == published
    assert campaign.recipient_count == 3
    assert campaign.approved_by == approver
    [entry] = history(campaign)
    assert entry.user == approver
    assert "Approved with template version 1 for 3 recipient(s)" in entry.get_change_message()
    data = api.get(f"/campaigns/{campaign.id}", key=world.keys["project"]).json()["data"]
    assert data["status"] == "approved"
    assert data["approved_at"] == "2026-01-01T12:00:00Z"
    assert data["recipient_count"] == 3
    assert data["template_version_id"] == str(published.id)


def test_a_later_publish_does_not_change_what_an_approved_campaign_sends(
    client, approver, campaign
):
    console_action(client, "approve", [campaign.pk])
    approved_version = Campaign.objects.get(pk=campaign.pk).template_version
    approved_version.state = "superseded"
    approved_version.save()
    TemplateVersionFactory(template=campaign.template, published=True, subject="Changed")

    campaign.refresh_from_db()
    assert campaign.template_version == approved_version


def test_staff_without_the_permission_are_not_offered_approve_and_cannot_post_it(
    client, onlooker, campaign
):
    page = client.get(reverse("admin:messaging_campaignawaitingreview_changelist"))

    assert page.status_code == 200
    assert b'value="approve"' not in page.content
    response = console_action(client, "approve", [campaign.pk], queue=True)
    rejected = console_action(client, "reject", [campaign.pk], reason="No", apply="yes")

    assert response.status_code == 200
    assert rejected.status_code == 200
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.IN_REVIEW
    assert campaign.recipient_count is None
    assert history(campaign) == []


def test_the_permission_is_what_offers_the_review_actions(rf, onlooker, approver):
    from django.contrib import admin

    modeladmin = CampaignAdmin(Campaign, admin.site)
    request = rf.get("/admin/")

    request.user = onlooker
    assert set(modeladmin.get_actions(request)) == set()
    request.user = approver
    assert set(modeladmin.get_actions(request)) == {"approve", "reject"}


def test_approving_a_campaign_not_in_review_reports_it_and_changes_nothing(client, approver, world):
    draft = CampaignFactory(project=world.project)

    response = console_action(client, "approve", [draft.pk], follow=True)

    assert "was not approved" in response.content.decode()
    draft.refresh_from_db()
    assert draft.status == CampaignStatus.DRAFT
    assert history(draft) == []


def test_approving_a_campaign_whose_template_was_deleted_reports_it(
    client, approver, campaign, clock
):
    campaign.template.deleted_at = clock()
    campaign.template.save()

    response = console_action(client, "approve", [campaign.pk], follow=True)

    assert "The template was deleted." in response.content.decode()
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.IN_REVIEW


def test_reject_asks_for_a_reason_then_sends_the_campaign_back_to_draft(
    client, approver, campaign, api, world
):
    asked = console_action(client, "reject", [campaign.pk])

    assert asked.status_code == 200
    assert b'name="reason"' in asked.content
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.IN_REVIEW

    done = console_action(
        client, "reject", [campaign.pk], reason="The link in the footer is broken.", apply="yes"
    )

    assert done.status_code == 302
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.DRAFT
    data = api.get(f"/campaigns/{campaign.id}", key=world.keys["project"]).json()["data"]
    assert data["status"] == "draft"
    assert data["review_note"] == "The link in the footer is broken."
    [entry] = history(campaign)
    assert entry.user == approver
    assert entry.get_change_message() == "Rejected: The link in the footer is broken."


def test_a_reject_without_a_reason_asks_again(client, approver, campaign):
    response = console_action(client, "reject", [campaign.pk], reason="  ", apply="yes")

    assert response.status_code == 200
    assert b"Say why" in response.content
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.IN_REVIEW


def test_submitting_again_clears_the_review_note(client, approver, campaign, api, world):
    world.project.default_from = "a@example.com"
    world.project.save()
    console_action(client, "reject", [campaign.pk], reason="Fix it", apply="yes")

    response = api.post(f"/campaigns/{campaign.id}/actions/submit", {}, key=world.keys["project"])

    assert response.json()["data"]["review_note"] is None


def test_the_review_queue_holds_only_campaigns_in_review(client, approver, campaign, world):
    CampaignFactory(project=world.project, name="Still a draft")
    CampaignFactory(project=world.project, approved=True, name="Already approved")

    page = client.get(reverse("admin:messaging_campaignawaitingreview_changelist"))

    content = page.content.decode()
    assert campaign.name in content
    assert "Still a draft" not in content
    assert "Already approved" not in content


def test_the_change_page_shows_the_rendered_email_in_a_sandboxed_frame_and_the_count(
    client, approver, campaign
):
    page = client.get(reverse("admin:messaging_campaignawaitingreview_change", args=[campaign.pk]))

    assert page.status_code == 200
    content = page.content.decode()
    assert '<iframe sandbox="" srcdoc="' in content
    assert html.escape("<p>Hi Ada</p>") in content
    assert "<strong>Subject:</strong> Hello Ada" in content
    assert "Hi Ada</pre>" in content
    assert "3 now (0 suppressed or unsubscribed)" in content


def test_the_change_page_shows_a_push_message_as_a_device_would(client, approver, world):
    template = MessageTemplateFactory(project=world.project, channel="push")
    TemplateVersionFactory(template=template, push=True, published=True, body="Sale on")
    audience = audience_with(world.project, 1, first_name="Grace")
    campaign = CampaignFactory(
        project=world.project,
        channel="push",
        template=template,
        audience=audience,
        app_id=world.project.id,
        in_review=True,
    )

    page = client.get(reverse("admin:messaging_campaign_change", args=[campaign.pk]))

    content = page.content.decode()
    assert "<div><strong>Hi Grace</strong></div><div>Sale on</div>" in content


def test_the_history_of_a_campaign_lists_who_approved_it(client, approver, campaign):
    console_action(client, "approve", [campaign.pk], queue=True)

    page = client.get(reverse("admin:messaging_campaign_history", args=[campaign.pk]))
    queue_history = client.get(
        reverse("admin:messaging_campaignawaitingreview_history", args=[campaign.pk])
    )

    assert "Approved with template version 1" in page.content.decode()
    assert approver.username in page.content.decode()
    assert queue_history.status_code == 302
