"""ProjectScopedModel: the base of the resources that belong to one project."""

import pytest

from tests.contacts.audiences.factories import AudienceFactory
from tests.contacts.factories import ContactFactory
from tests.contacts.topics.factories import TopicFactory

pytestmark = pytest.mark.django_db


def test_project_scoped_models_are_reached_from_their_project_by_plural_name(world):
    contact = ContactFactory(project=world.project)
    audience = AudienceFactory(project=world.project)
    topic = TopicFactory(project=world.project)
    assert list(world.project.contacts.all()) == [contact]
    assert list(world.project.audiences.all()) == [audience]
    assert list(world.project.topics.all()) == [topic]
    assert contact.created_at <= contact.updated_at
    world.project.delete()
    assert not type(contact).objects.filter(id=contact.id).exists()
