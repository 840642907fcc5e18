"""Factories for topics and subscriptions."""

import factory
from factory.django import DjangoModelFactory

from config.runtime import clock
from contacts.topics.models import Subscription, SubscriptionSource, SubscriptionStatus, Topic
from tests.contacts.factories import ContactFactory
from tests.factories import ProjectFactory


class TopicFactory(DjangoModelFactory):
    class Meta:
        model = Topic

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"Topic {n}")
    default_status = SubscriptionStatus.UNSUBSCRIBED

    class Params:
        opt_out = factory.Trait(default_status=SubscriptionStatus.SUBSCRIBED)


class SubscriptionFactory(DjangoModelFactory):
    class Meta:
        model = Subscription

    topic = factory.SubFactory(TopicFactory)
    contact = factory.SubFactory(ContactFactory, project=factory.SelfAttribute("..topic.project"))
    status = SubscriptionStatus.SUBSCRIBED
    source = SubscriptionSource.API
    changed_at = factory.LazyFunction(clock.now)
