"""Factories for message templates and their versions."""

import factory
from factory.django import DjangoModelFactory

from config.runtime import clock
from messaging.models.templates import Channel, MessageTemplate, TemplateVersion, VersionState
from tests.factories import ProjectFactory


class MessageTemplateFactory(DjangoModelFactory):
    class Meta:
        model = MessageTemplate

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"Template {n}")
    channel = Channel.EMAIL
    from_email = None

    class Params:
        deleted = factory.Trait(deleted_at=factory.LazyFunction(clock.now))


class TemplateVersionFactory(DjangoModelFactory):
    """An email draft by default; `push=True` fills the push members instead."""

    class Meta:
        model = TemplateVersion

    template = factory.SubFactory(MessageTemplateFactory)
    version_number = factory.LazyAttribute(lambda v: v.template.versions.count() + 1)
    state = VersionState.DRAFT
    subject = "Hello {{ contact.fields.first_name }}"
    html = "<p>Hi {{ contact.fields.first_name }}</p>"
    text = "Hi {{ contact.fields.first_name }}"

    class Params:
        published = factory.Trait(
            state=VersionState.PUBLISHED, published_at=factory.LazyFunction(clock.now)
        )
        superseded = factory.Trait(
            state=VersionState.SUPERSEDED, published_at=factory.LazyFunction(clock.now)
        )
        push = factory.Trait(
            subject=None,
            html=None,
            text=None,
            title="Hi {{ contact.fields.first_name }}",
            body="Your order {{ event.payload.order_id }} shipped",
            data={"url": "https://example.com/orders/{{ event.payload.order_id }}"},
        )
