"""Factories for contacts."""

import factory
from factory.django import DjangoModelFactory

from config.runtime import clock
from contacts.models import Contact
from tests.factories import ProjectFactory


class ContactFactory(DjangoModelFactory):
    class Meta:
        model = Contact

    project = factory.SubFactory(ProjectFactory)
    email = factory.Sequence(lambda n: f"person{n}@example.com")
    external_id = None
    fields = factory.LazyFunction(dict)

    class Params:
        deleted = factory.Trait(deleted_at=factory.LazyFunction(clock.now))
