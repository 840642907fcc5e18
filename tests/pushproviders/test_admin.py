import pytest
from django.test import Client

from bench import keys
from config.runtime import secrets
from tests.pushproviders.factories import (
    PushAppFactory,
    PushInstallationFactory,
    PushProviderFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_provider_pages_show_readiness_and_never_a_secret(api, staff, world):
    app = PushAppFactory(project=world.project)
    private, _ = keys.vapid_pair()
    for body in (
        {"platform": "fcm", "service_account": keys.service_account()},
        {"platform": "apns", "apns_private_key": keys.apns_p8()},
        {"platform": "webpush", "web_vapid_private_key": private},
    ):
        assert (
            api.post(f"/push/apps/{app.id}/providers", body, key=world.keys["project"]).status_code
            == 201
        )
    pages = [
        staff.get("/admin/pushproviders/pushprovider/"),
        staff.get(f"/admin/pushproviders/pushapp/{app.id}/change/"),
    ]
    pages += [
        staff.get(f"/admin/pushproviders/pushprovider/{provider.id}/change/")
        for provider in app.providers.all()
    ]

    for page in pages:
        assert page.status_code == 200
        html = page.content.decode()
        assert "PRIVATE KEY" not in html
        assert private not in html
        assert keys.rsa_pem().splitlines()[1] not in html
        for provider in app.providers.all():
            for encrypted in (
                provider.service_account_encrypted,
                provider.apns_private_key_encrypted,
                provider.web_vapid_private_key_encrypted,
            ):
                assert not encrypted or encrypted not in html
    assert any("missing: web_vapid_subject" in page.content.decode() for page in pages)


def test_a_provider_whose_secret_is_unreadable_says_why_in_the_console(staff, world):
    provider = PushProviderFactory(
        app__project=world.project, service_account_encrypted=secrets.encrypt("not json")
    )

    html = staff.get(f"/admin/pushproviders/pushprovider/{provider.id}/change/").content.decode()

    assert "missing: service_account" in html
    assert "malformed" in html


def test_installation_pages_show_only_the_end_of_the_token(staff, world):
    installation = PushInstallationFactory(app__project=world.project, token="x" * 40 + "tail42")

    for url in (
        "/admin/pushproviders/pushinstallation/",
        f"/admin/pushproviders/pushinstallation/{installation.id}/change/",
    ):
        html = staff.get(url).content.decode()
        assert "…tail42" in html
        assert installation.token not in html


def test_push_rows_cannot_be_added_or_deleted_in_the_console(staff, world):
    provider = PushProviderFactory(app__project=world.project)

    assert staff.get("/admin/pushproviders/pushprovider/add/").status_code == 403
    assert staff.get(f"/admin/pushproviders/pushprovider/{provider.id}/delete/").status_code == 403
    assert staff.get(f"/admin/pushproviders/pushapp/{provider.app.id}/delete/").status_code == 403
