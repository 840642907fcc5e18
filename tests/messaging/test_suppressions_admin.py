import pytest
from django.test import Client

from tests.messaging.factories_suppressions import SuppressionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_the_list_is_searched_by_exact_address_in_any_case(staff, world):
    ada = SuppressionFactory(project=world.project, email="ada@example.com", reason="bounce")
    SuppressionFactory(project=world.project, email="ada.lovelace@example.com")

    response = staff.get("/admin/messaging/suppression/", {"q": " ADA@Example.com "})

    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [ada]


def test_an_at_domain_search_finds_every_address_of_the_domain(staff, world):
    ada = SuppressionFactory(project=world.project, email="ada@example.com")
    bob = SuppressionFactory(project=world.project, email="bob@example.com")
    SuppressionFactory(project=world.project, email="cy@example.org")

    response = staff.get("/admin/messaging/suppression/", {"q": "@example.com"})

    assert set(response.context["cl"].result_list) == {ada, bob}


def test_an_entry_page_is_read_only(staff, world):
    entry = SuppressionFactory(project=world.project, email="ada@example.com")

    page = staff.get(f"/admin/messaging/suppression/{entry.id}/change/")

    assert page.status_code == 200
    assert "ada@example.com" in page.content.decode()
    assert 'name="email"' not in page.content.decode()
    assert staff.get("/admin/messaging/suppression/add/").status_code == 403
