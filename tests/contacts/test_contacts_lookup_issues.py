"""A lookup that cannot run names what is missing."""

import pytest

from tests.contacts.test_contacts_api import assert_error

pytestmark = pytest.mark.django_db


def test_a_lookup_without_any_identifier_names_the_missing_member(api, world):
    response = api.post("/contacts/lookup", {}, key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert [(issue["path"], issue["code"]) for issue in error["issues"]] == [("email", "required")]
