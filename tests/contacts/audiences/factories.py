"""Factories for audiences, their properties and memberships."""

import factory
from factory.django import DjangoModelFactory

from contacts.audiences.models import Audience, AudienceMembership, AudienceProperty, PropertyType
from tests.contacts.factories import ContactFactory
from tests.factories import ProjectFactory


class AudienceFactory(DjangoModelFactory):
    class Meta:
        model = Audience

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"Audience {n}")


class AudiencePropertyFactory(DjangoModelFactory):
    class Meta:
        model = AudienceProperty

    audience = factory.SubFactory(AudienceFactory)
    key = factory.Sequence(lambda n: f"prop_{n}")
    type = PropertyType.STRING


class AudienceMembershipFactory(DjangoModelFactory):
    class Meta:
        model = AudienceMembership

    audience = factory.SubFactory(AudienceFactory)
    contact = factory.SubFactory(
        ContactFactory, project=factory.SelfAttribute("..audience.project")
    )
    properties = factory.LazyFunction(dict)
