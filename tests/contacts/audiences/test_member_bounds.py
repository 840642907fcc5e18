"""Audience member properties: within the project's `contact_fields_limit_bytes`."""

import pytest

from contacts.audiences.models import AudienceMembership
from tests.contacts.audiences.factories import (
    AudienceFactory,
    AudienceMembershipFactory,
    AudiencePropertyFactory,
)
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_api import assert_error

pytestmark = pytest.mark.django_db

LIMIT = 1024


@pytest.fixture
def audience(world):
    world.project.contact_fields_limit_bytes = LIMIT
    world.project.save(update_fields=["contact_fields_limit_bytes"])
    audience = AudienceFactory(project=world.project)
    for index in range(3):
        AudiencePropertyFactory(audience=audience, key=f"note_{index}", type="string")
    return audience


def test_new_member_properties_over_the_bound_are_422(api, world, audience):
    contact = ContactFactory(project=world.project)
    properties = {"note_0": "x" * 600, "note_1": "x" * 600}

    response = api.post(
        f"/audiences/{audience.id}/members",
        {"contact_id": str(contact.id), "properties": properties},
        key=world.keys["project"],
    )

    error = assert_error(response, 422, "payload_too_large")
    assert [issue["path"] for issue in error["issues"]] == ["properties"]
    assert not AudienceMembership.objects.exists()


def test_merged_member_properties_over_the_bound_are_422(api, world, audience):
    membership = AudienceMembershipFactory(audience=audience, properties={"note_0": "x" * 600})

    response = api.post(
        f"/audiences/{audience.id}/members",
        {"contact_id": str(membership.contact_id), "properties": {"note_1": "x" * 600}},
        key=world.keys["project"],
    )

    assert_error(response, 422, "payload_too_large")
    membership.refresh_from_db()
    assert membership.properties == {"note_0": "x" * 600}


def test_member_properties_within_the_bound_are_stored(api, world, audience):
    contact = ContactFactory(project=world.project)

    response = api.post(
        f"/audiences/{audience.id}/members",
        {"contact_id": str(contact.id), "properties": {"note_0": "x" * 900}},
        key=world.keys["project"],
    )

    assert response.status_code == 201
