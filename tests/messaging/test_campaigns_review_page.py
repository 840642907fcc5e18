"""A campaign's console page: the checklist before approval, Approve and Reject (with a
note) as buttons that behave as the changelist's actions do and only for staff holding
`approve_campaign`, the fields of the campaign's channel only, and its funnel."""

import datetime as dt

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from messaging.models import Campaign, CampaignStatus, EmailStatus, RecipientStatus, SkipReason
from tests.messaging.factories_campaigns import (
    CampaignFactory,
    audience_with,
    console_action,
    reviewer,
)
from tests.messaging.factories_domains import DomainFactory
from tests.messaging.factories_emails import EmailFactory
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(world):
    audience = audience_with(world.project, 3, first_name="Ada")
    return CampaignFactory(project=world.project, audience=audience, in_review=True, name="Sale")


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


def page_of(client, campaign, *, queue=False):
    model = "campaignawaitingreview" if queue else "campaign"
    page = client.get(reverse(f"admin:messaging_{model}_change", args=[campaign.pk]))
    assert page.status_code == 200
    return page.content.decode()


def approve_url(campaign, *, queue=False):
    model = "campaignawaitingreview" if queue else "campaign"
    return reverse(f"admin:messaging_{model}_approve", args=[campaign.pk])


def reject_url(campaign, *, queue=False):
    model = "campaignawaitingreview" if queue else "campaign"
    return reverse(f"admin:messaging_{model}_reject", args=[campaign.pk])


def history(campaign):
    return [
        entry.get_change_message()
        for entry in LogEntry.objects.filter(object_id=str(campaign.pk)).order_by("id")
    ]


def test_a_reviewer_sees_the_checklist_and_both_buttons(client, approver, campaign, world):
    content = page_of(client, campaign, queue=True)

    assert 'id="campaign-review"' in content
    assert 'data-check="recipients"><strong>Recipients now:</strong> 3 (' in content
    assert "Suppressed or unsubscribed (skipped):</strong> 0" in content
    assert "Template version approval freezes:</strong> version 1 of" in content
    assert "Sender:</strong> News &lt;news@example.com&gt;" in content
    assert 'class="check problem" data-check="sender_domain"' in content
    assert f'action="{approve_url(campaign, queue=True)}"' in content
    assert f'action="{reject_url(campaign, queue=True)}"' in content
    assert 'name="csrfmiddlewaretoken"' in content
    assert 'name="expected_recipients" value="3"' in content


def test_a_verified_sender_domain_is_checked_off(client, approver, campaign, world):
    DomainFactory(project=world.project, name="example.com", verified=True)

    content = page_of(client, campaign)

    assert 'class="check ok" data-check="sender_domain"' in content


def test_a_pending_domain_of_the_sender_or_another_projects_verified_one_is_not(
    client, approver, campaign, world
):
    DomainFactory(project=world.project, name="example.com")
    DomainFactory(project=world.other_project, name="example.com", verified=True)

    content = page_of(client, campaign)

    assert 'class="check problem" data-check="sender_domain"' in content


def test_a_template_without_a_published_version_is_flagged(client, approver, world):
    template = MessageTemplateFactory(project=world.project, channel="email")
    TemplateVersionFactory(template=template)
    campaign = CampaignFactory(project=world.project, template=template, in_review=True)

    content = page_of(client, campaign)

    assert 'class="check problem" data-check="template_version"' in content
    assert "The template has no published version; publish it first." in content


def test_a_viewer_sees_the_checklist_but_no_buttons_and_a_post_is_refused(
    client, onlooker, campaign
):
    content = page_of(client, campaign, queue=True)

    assert 'data-check="recipients"' in content
    assert 'id="approve-form"' not in content
    assert 'id="reject-form"' not in content
    approved = client.post(approve_url(campaign), {"expected_recipients": "3"})
    rejected = client.post(reject_url(campaign, queue=True), {"note": "No"})

    assert approved.status_code == 403
    assert rejected.status_code == 403
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.IN_REVIEW
    assert campaign.review_note is None
    assert history(campaign) == []


def test_the_buttons_take_posts_only(client, approver, campaign):
    assert client.get(approve_url(campaign)).status_code == 405
    assert client.get(reject_url(campaign)).status_code == 405
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.IN_REVIEW


def test_a_post_without_the_csrf_token_is_refused(approver, campaign):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(approver)

    response = strict.post(approve_url(campaign), {"expected_recipients": "3"})

    assert response.status_code == 403
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.IN_REVIEW


def test_the_approve_button_approves_exactly_as_the_action_does(
    client, approver, campaign, world, clock
):
    twin = CampaignFactory(
        project=world.project,
        audience=campaign.audience,
        template=campaign.template,
        in_review=True,
        name="Twin",
    )

    by_button = client.post(
        approve_url(campaign, queue=True), {"expected_recipients": "3"}, follow=True
    )
    console_action(client, "approve", [twin.pk], queue=True)

    assert by_button.redirect_chain[0][0] == reverse(
        "admin:messaging_campaign_change", args=[campaign.pk]
    )
    assert "Approved “Sale” for 3 recipient(s)." in by_button.content.decode()
    campaign.refresh_from_db()
    twin.refresh_from_db()
    fields = ["status", "template_version_id", "recipient_count", "approved_by_id", "approved_at"]
    assert [getattr(campaign, name) for name in fields] == [getattr(twin, name) for name in fields]
    assert campaign.status == CampaignStatus.APPROVED
    assert campaign.approved_by == approver
    assert history(campaign) == history(twin)
    assert history(campaign) == [
        "Approved with template version 1 for 3 recipient(s) (0 suppressed)."
    ]
    # Approved, it shows no review box any more.
    assert 'id="campaign-review"' not in page_of(client, campaign)


def test_a_count_that_changed_since_the_page_was_shown_is_reported(client, approver, campaign):
    response = client.post(approve_url(campaign), {"expected_recipients": "5"}, follow=True)

    content = response.content.decode()
    assert "Approved “Sale” for 3 recipient(s)." in content
    assert "5 shown, 3 at approval" in content


def test_approving_twice_reports_the_second_and_changes_nothing_more(client, approver, campaign):
    client.post(approve_url(campaign, queue=True), {"expected_recipients": "3"})

    again = client.post(
        approve_url(campaign, queue=True), {"expected_recipients": "3"}, follow=True
    )

    assert "“Sale” was not approved" in again.content.decode()
    assert len(history(campaign)) == 1


def test_the_reject_button_records_the_note(client, approver, campaign, api, world):
    response = client.post(
        reject_url(campaign, queue=True), {"note": "  The link is broken.  "}, follow=True
    )

    assert "Rejected “Sale” back to draft." in response.content.decode()
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.DRAFT
    assert campaign.review_note == "The link is broken."
    assert any("The link is broken." in message for message in history(campaign))
    data = api.get(f"/campaigns/{campaign.id}", key=world.keys["project"]).json()["data"]
    assert data["review_note"] == "The link is broken."


def test_a_reject_without_a_note_changes_nothing(client, approver, campaign):
    response = client.post(reject_url(campaign), {"note": "   "}, follow=True)

    assert "Say why the campaign is rejected: nothing changed." in response.content.decode()
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.IN_REVIEW
    assert history(campaign) == []


def test_an_unknown_campaign_is_a_404(client, approver):
    assert client.post("/admin/messaging/campaign/not-a-uuid/approve/").status_code == 404


def test_an_email_campaign_shows_no_push_app(client, approver, campaign):
    content = page_of(client, campaign)

    assert "App id" not in content
    assert "From email" in content


def test_a_push_campaign_shows_no_sender_and_no_domain_check(client, approver, world):
    template = MessageTemplateFactory(project=world.project, channel="push")
    TemplateVersionFactory(template=template, push=True, published=True, body="Sale on")
    campaign = CampaignFactory(
        project=world.project,
        channel="push",
        template=template,
        from_email=None,
        app_id=world.project.id,
        in_review=True,
    )

    content = page_of(client, campaign)

    assert "App id" in content
    assert "From email" not in content
    assert 'data-check="sender_domain"' not in content


def test_a_sent_campaign_shows_its_funnel(client, approver, world, clock):
    campaign = CampaignFactory(project=world.project, sent=True)
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for status, opened, clicked in [
        (EmailStatus.DELIVERED, True, True),
        (EmailStatus.DELIVERED, True, False),
        (EmailStatus.DELIVERED, False, False),
        (EmailStatus.COMPLAINED, True, False),
        (EmailStatus.BOUNCED, False, False),
        (EmailStatus.SENT, False, False),
        (EmailStatus.FAILED, False, False),
    ]:
        EmailFactory(
            project=world.project,
            campaign=campaign,
            status=status,
            opened_at=at if opened else None,
            clicked_at=at if clicked else None,
        )
    skipped = audience_with(world.project, 1)
    campaign.recipients.create(
        contact=skipped.memberships.get().contact,
        status=RecipientStatus.SUPPRESSED,
        reason=SkipReason.UNSUBSCRIBED,
    )

    content = page_of(client, Campaign.objects.get(pk=campaign.pk))

    figures = {
        label: value
        for label, value in [
            ("Recipients", 8),
            ("Sent", 6),
            ("Delivered", 4),
            ("Opened", 3),
            ("Clicked", 1),
            ("Bounced", 1),
            ("Complained", 1),
            ("Failed", 1),
            ("Skipped: unsubscribed", 1),
        ]
    }
    for label, value in figures.items():
        assert f'data-figure="{label}"><th>{label}</th><td>{value}</td>' in content
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="console-chart console-chart-funnel"' in (
        content
    )
    assert "<title>Delivered: 4 (50% of Recipients)</title>" in content


def test_a_started_push_campaign_shows_the_push_funnel(client, approver, world):
    template = MessageTemplateFactory(project=world.project, channel="push")
    TemplateVersionFactory(template=template, push=True, published=True, body="Sale on")
    campaign = CampaignFactory(
        project=world.project,
        channel="push",
        template=template,
        from_email=None,
        app_id=world.project.id,
        sent=True,
    )

    content = page_of(client, campaign)

    for label in ("Recipients", "Sent", "Opened", "Failed"):
        assert f'data-figure="{label}"><th>{label}</th><td>0</td>' in content
    assert 'data-figure="Delivered"' not in content


def test_the_page_counts_the_audience_once_for_the_checklist_and_the_field(
    client, approver, campaign
):
    with CaptureQueriesContext(connection) as queries:
        content = page_of(client, campaign, queue=True)

    counts = [query for query in queries if "FILTER (WHERE topic_subscribed" in query["sql"]]
    assert len(counts) == 1
    assert "3 now (0 suppressed or unsubscribed)" in content
    assert 'name="expected_recipients" value="3"' in content
