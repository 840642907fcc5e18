"""What one fan-out batch stores and what it costs: every email is the message rendering
the frozen version for its contact alone gives (whatever shortcut the batch took), and a
batch issues the same statements however many contacts it holds."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from messaging.errors import TemplateRenderFailed
from messaging.models import Campaign, Email, EmailStatus
from messaging.services.campaign_fanout import campaign_fanout_batch
from messaging.services.campaigns import campaign_approve
from messaging.services.rendering import render_email, template_context
from tests.contacts.audiences.factories import AudienceMembershipFactory
from tests.messaging.factories_campaigns import audience_with, email_template_id, reviewer

pytestmark = pytest.mark.django_db


@pytest.fixture
def shop(world):
    world.project.default_from = "Shop <shop@example.com>"
    world.project.save()
    return world


def sending(api, world, template_id, audience):
    """A campaign created, submitted and sent through the API, approved by staff."""
    key = world.keys["project"]
    created = api.post(
        "/campaigns",
        {"name": "Spring sale", "template_id": template_id, "audience_id": str(audience.id)},
        key=key,
    )
    assert created.status_code == 201, created.content
    campaign_id = created.json()["data"]["id"]
    assert api.post(f"/campaigns/{campaign_id}/actions/submit", {}, key=key).status_code == 200
    campaign_approve(campaign_id=campaign_id, user_id=reviewer().pk)
    sent = api.post(f"/campaigns/{campaign_id}/actions/send", {}, key=key)
    assert sent.status_code == 202, sent.content
    return Campaign.objects.select_related("project", "template_version").get(pk=campaign_id)


def rendered_alone(campaign, contact):
    """Subject, html and text rendered for the contact alone, or why that fails."""
    variables = template_context(project=campaign.project, contact=contact)
    try:
        rendered = render_email(campaign.template_version, variables)
    except TemplateRenderFailed as error:
        return error.details
    return (rendered.subject, rendered.html, rendered.text)


def test_each_email_is_what_rendering_the_version_for_its_contact_alone_gives(api, shop):
    template_id = email_template_id(
        api,
        shop,
        # Read once for the batch, per contact with one context, and the ordinary way.
        subject="News from {{ project.name }}",
        html="<p>{{ contact.fields.first_name | default: 'there' }} in {{ contact.fields.city }}"
        "</p><p>{{ 10 | divided_by: contact.fields.n }}</p>",
        text="{% if contact.fields.first_name %}Hi {{ contact.fields.first_name }}{% endif %}",
    )
    audience = audience_with(shop.project, 2, first_name="Ada & <Bob>", city="Paris", n=5)
    for fields in ({}, {"first_name": None, "city": 7, "n": 0}, {"first_name": ["a", "b"]}):
        AudienceMembershipFactory(audience=audience, contact__fields=fields)
    campaign = sending(api, shop, template_id, audience)

    assert campaign_fanout_batch() == 1

    emails = list(Email.objects.filter(campaign=campaign).select_related("contact"))
    assert len(emails) == 5
    for email in emails:
        alone = rendered_alone(campaign, email.contact)
        if isinstance(alone, str):
            assert email.status == EmailStatus.FAILED
            assert email.last_error.endswith(alone)
            assert (email.subject, email.html, email.text) == ("", None, None)
        else:
            assert email.status == EmailStatus.QUEUED
            assert (email.subject, email.html, email.text) == alone
    assert {email.status for email in emails} == {EmailStatus.QUEUED, EmailStatus.FAILED}
    assert len({email.message_id for email in emails}) == 5


def statements_of_the_first_batch(api, world, template_id, settings, size):
    settings.CAMPAIGN_FANOUT_BATCH_SIZE = size
    audience = audience_with(world.project, size, first_name="Ada", city="Paris")
    campaign = sending(api, world, template_id, audience)
    with CaptureQueriesContext(connection) as statements:
        assert campaign_fanout_batch() == 1
    assert Email.objects.filter(campaign=campaign, status=EmailStatus.QUEUED).count() == size
    # The batch after the last contact (empty), so the next campaign starts afresh.
    while campaign_fanout_batch():
        pass
    return [statement["sql"] for statement in statements]


def test_a_batch_issues_the_same_statements_however_many_contacts_it_holds(api, shop, settings):
    template_id = email_template_id(
        api,
        shop,
        subject="Hello {{ contact.fields.first_name }}",
        html="<p>{{ contact.fields.city }}</p>",
        text="{% if contact.fields.first_name %}Hi{% endif %}",
    )

    small = statements_of_the_first_batch(api, shop, template_id, settings, 2)
    large = statements_of_the_first_batch(api, shop, template_id, settings, 24)

    # Emails and delivery jobs go by COPY on the driver's cursor, outside this count.
    assert len(large) == len(small), "\n".join(large)
    assert len(large) < 24, "\n".join(large)
