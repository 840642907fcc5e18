"""Factories for campaigns, and the steps of a campaign's life as a customer and staff
take them (through the API and the console)."""

from typing import Any

import factory
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from factory.django import DjangoModelFactory

from config.runtime import clock
from contacts.audiences.models import Audience
from messaging.models import Campaign, CampaignStatus, Channel
from tests.contacts.audiences.factories import AudienceFactory, AudienceMembershipFactory
from tests.factories import ProjectFactory, UserFactory
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory


class CampaignFactory(DjangoModelFactory):
    """An email draft to a new audience, with a published template; traits for later states
    (`in_review`, `approved`, `sending`, `sent`, `canceled`)."""

    class Meta:
        model = Campaign
        skip_postgeneration_save = True

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"Campaign {n}")
    channel = Channel.EMAIL
    template = factory.SubFactory(
        MessageTemplateFactory, project=factory.SelfAttribute("..project"), channel="email"
    )
    audience = factory.SubFactory(AudienceFactory, project=factory.SelfAttribute("..project"))
    from_email = "News <news@example.com>"

    class Params:
        in_review = factory.Trait(
            status=CampaignStatus.IN_REVIEW, submitted_at=factory.LazyFunction(clock.now)
        )
        approved = factory.Trait(
            status=CampaignStatus.APPROVED,
            submitted_at=factory.LazyFunction(clock.now),
            approved_at=factory.LazyFunction(clock.now),
            recipient_count=0,
            template_version=factory.SubFactory(
                TemplateVersionFactory,
                template=factory.SelfAttribute("..template"),
                published=True,
            ),
        )
        sent = factory.Trait(
            status=CampaignStatus.SENT,
            started_at=factory.LazyFunction(clock.now),
            sent_at=factory.LazyFunction(clock.now),
        )
        canceled = factory.Trait(
            status=CampaignStatus.CANCELED, canceled_at=factory.LazyFunction(clock.now)
        )

    @factory.post_generation
    def published(self, create: bool, extracted: Any, **kwargs: Any) -> None:
        # Every campaign's template has a published version unless told otherwise.
        if create and extracted is not False and not self.template.versions.exists():
            TemplateVersionFactory(template=self.template, published=True)


def audience_with(project: Any, count: int, **fields: Any) -> Audience:
    """An audience of `count` new contacts (each with `fields`)."""
    audience = AudienceFactory(project=project)
    for _ in range(count):
        AudienceMembershipFactory(audience=audience, contact__fields=dict(fields))
    return audience


def email_template_id(api: Any, world: Any, **content: Any) -> str:
    """A published email template made through the API."""
    body = {
        "name": "Newsletter",
        "channel": "email",
        "subject": "Hello {{ contact.fields.first_name }}",
        "html": '<p>Hi {{ contact.fields.first_name }}</p><a href="https://example.com/a">Read</a>',
        "text": "Hi {{ contact.fields.first_name }}",
        **content,
    }
    created = api.post("/templates", body, key=world.keys["project"])
    assert created.status_code == 201, created.content
    template_id = created.json()["data"]["id"]
    published = api.post(f"/templates/{template_id}/actions/publish", {}, key=world.keys["project"])
    assert published.status_code == 200, published.content
    return str(template_id)


def reviewer(*, may_approve: bool = True, username: str = "reviewer@example.com") -> Any:
    """A staff user who may view campaigns and, unless told otherwise, approve them."""
    user = UserFactory(username=username, is_staff=True)
    codenames = ["view_campaign", "view_campaignawaitingreview"]
    if may_approve:
        codenames.append("approve_campaign")
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="messaging", codename__in=codenames)
    )
    return user


def console_action(
    client: Client,
    action: str,
    campaign_ids: list[Any],
    *,
    queue: bool = False,
    follow: bool = False,
    **form: Any,
) -> Any:
    """Runs a changelist action of the campaigns console (or of its review queue)."""
    model = "campaignawaitingreview" if queue else "campaign"
    return client.post(
        reverse(f"admin:messaging_{model}_changelist"),
        {"action": action, "_selected_action": [str(pk) for pk in campaign_ids], **form},
        follow=follow,
    )
