import pytest
from django.test import Client

from config.runtime import secrets
from tests.messaging.factories_domains import DomainFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_the_domain_list_finds_a_domain_by_name(staff, world):
    domain = DomainFactory(project=world.project, name="example.com", verified=True)
    DomainFactory(project=world.project, name="other.org")

    response = staff.get("/admin/messaging/domain/", {"q": "example"})

    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [domain]


def test_a_domain_page_shows_its_records_and_never_its_private_key(staff, world):
    domain = DomainFactory(project=world.project, name="example.com")

    page = staff.get(f"/admin/messaging/domain/{domain.id}/change/")

    assert page.status_code == 200
    html = page.content.decode()
    assert f"{domain.dkim_selector}._domainkey.example.com" in html
    assert "_dmarc.example.com" in html
    assert "v=spf1" in html
    assert "PRIVATE KEY" not in html
    assert domain.dkim_private_key_encrypted not in html
    assert secrets.decrypt(domain.dkim_private_key_encrypted) not in html


def test_domains_cannot_be_added_or_deleted_in_the_console(staff, world):
    domain = DomainFactory(project=world.project)

    assert staff.get("/admin/messaging/domain/add/").status_code == 403
    assert staff.get(f"/admin/messaging/domain/{domain.id}/delete/").status_code == 403
