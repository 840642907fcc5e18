"""Ids in paths match in any case."""

import pytest

from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db


def test_an_upper_case_id_in_a_path_finds_the_resource(api, world):
    contact = ContactFactory(project=world.project)

    response = api.get(f"/contacts/{str(contact.id).upper()}", key=world.keys["project"])

    assert response.status_code == 200
    assert response.json()["data"]["id"] == str(contact.id)


def test_a_mixed_case_nested_path_finds_the_resource(api, world):
    contact = ContactFactory(project=world.project)
    mixed = "".join(c.upper() if i % 2 else c for i, c in enumerate(str(contact.id)))

    response = api.get(f"/contacts/{mixed}/subscriptions", key=world.keys["project"])

    assert response.status_code == 200
