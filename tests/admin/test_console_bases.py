"""The bases every admin shares: a count that stops at the cap on large tables."""

import pytest

from config.console import admin as config_admin
from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db


def test_a_large_table_is_counted_only_up_to_the_cap(admin_client, world, monkeypatch):
    monkeypatch.setattr(config_admin, "COUNT_CAP", 2)
    for _ in range(4):
        ContactFactory(project=world.project)

    page = admin_client.get("/admin/contacts/contact/")

    assert page.status_code == 200
    assert page.context["cl"].result_count == 3
