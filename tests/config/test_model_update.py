"""model_update: the one way services change some fields of a row."""

import pytest

from config.db.update import model_update
from contacts.audiences.models import Audience
from tests.contacts.audiences.factories import AudienceFactory

pytestmark = pytest.mark.django_db


def test_model_update_writes_only_what_changed_and_stamps_updated_at():
    audience = AudienceFactory(name="Old", description="Same")
    before = audience.updated_at
    changed = model_update(audience, fields={"name": "New", "description": "Same"})
    assert changed == ["name"]
    stored = Audience.objects.get(id=audience.id)
    assert (stored.name, stored.description) == ("New", "Same")
    assert stored.updated_at > before


def test_model_update_without_a_change_does_not_touch_the_database(
    django_assert_num_queries,
):
    audience = AudienceFactory(name="Same")
    with django_assert_num_queries(0):
        assert model_update(audience, fields={"name": "Same"}) == []


def test_model_update_leaves_fields_it_was_not_given():
    audience = AudienceFactory(name="Kept", description="Old")
    Audience.objects.filter(id=audience.id).update(name="Changed elsewhere")
    model_update(audience, fields={"description": "New"})
    stored = Audience.objects.get(id=audience.id)
    assert (stored.name, stored.description) == ("Changed elsewhere", "New")
