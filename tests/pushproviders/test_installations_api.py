"""Device installations over HTTP: `POST /push/installations`,
`DELETE /push/installations/{id}`."""

import threading

import pytest
from django.db import connection

from bench import keys
from config.net import netguard
from contacts.models import Contact
from pushproviders.models import PushInstallation
from tests.contacts.factories import ContactFactory
from tests.pushproviders.conftest import NOT_PUBLIC_BY_THEMSELVES
from tests.pushproviders.factories import PushAppFactory, PushInstallationFactory

pytestmark = pytest.mark.django_db

INSTALLATION_MEMBERS = {
    "id",
    "app_id",
    "platform",
    "contact_id",
    "active",
    "created_at",
    "last_seen_at",
}


@pytest.fixture
def app(world):
    return PushAppFactory(project=world.project)


@pytest.fixture
def contact(world):
    return ContactFactory(project=world.project)


def register(api, world, body, key="project"):
    return api.post("/push/installations", body, key=world.keys[key])


def assert_400_at(response, path: str) -> None:
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "validation_error"
    assert path in [issue["path"] for issue in response.json()["error"]["issues"]]


def test_registering_a_token_answers_201_without_the_token(api, world, app, contact):
    response = register(
        api,
        world,
        {
            "app_id": str(app.id),
            "platform": "fcm",
            "token": "tok-123",
            "contact_id": str(contact.id),
        },
    )

    assert response.status_code == 201
    data = response.json()["data"]
    assert set(data) == INSTALLATION_MEMBERS
    assert data["app_id"] == str(app.id)
    assert data["contact_id"] == str(contact.id)
    assert data["active"] is True
    assert "tok-123" not in response.content.decode()


def test_the_app_may_be_named_by_its_public_id(api, world, app, contact):
    response = register(
        api,
        world,
        {
            "app_id": app.public_id,
            "platform": "apns",
            "token": keys.APNS_TOKEN,
            "email": contact.email,
        },
    )

    assert response.status_code == 201
    assert response.json()["data"]["contact_id"] == str(contact.id)


def test_registering_the_same_token_again_updates_its_one_installation(
    api, world, app, contact, clock
):
    other = ContactFactory(project=world.project)
    body = {
        "app_id": str(app.id),
        "platform": "fcm",
        "token": "tok-1",
        "contact_id": str(contact.id),
    }
    first = register(api, world, body)
    PushInstallation.objects.update(active=False)
    clock.advance(hours=1)

    again = register(api, world, {**body, "contact_id": str(other.id)})

    assert again.status_code == 200
    data = again.json()["data"]
    assert data["id"] == first.json()["data"]["id"]
    assert data["contact_id"] == str(other.id)
    assert data["active"] is True
    assert data["last_seen_at"] > first.json()["data"]["last_seen_at"]
    assert PushInstallation.objects.count() == 1


def test_an_unknown_email_creates_the_contact(api, world, app):
    response = register(
        api,
        world,
        {"app_id": str(app.id), "platform": "fcm", "token": "t", "email": "New@Example.com"},
    )

    assert response.status_code == 201
    contact = Contact.objects.get(id=response.json()["data"]["contact_id"])
    assert contact.email == "new@example.com"


def test_a_web_push_subscription_is_registered_with_its_keys(api, world, app, contact):
    subscription = keys.subscription()

    response = register(
        api,
        world,
        {
            "app_id": str(app.id),
            "platform": "webpush",
            "subscription": subscription,
            "contact_id": str(contact.id),
        },
    )

    assert response.status_code == 201
    stored = PushInstallation.objects.get()
    assert stored.token == subscription["endpoint"]
    assert stored.web_p256dh == subscription["keys"]["p256dh"]
    assert subscription["endpoint"] not in response.content.decode()


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://updates.push.services.mozilla.com/wpush",
        "https://localhost/push",
        "https://127.0.0.1/push",
        "https://10.1.2.3/push",
        "https://[::1]/push",
        "https://user:secret@updates.push.services.mozilla.com/wpush",
        *NOT_PUBLIC_BY_THEMSELVES,
    ],
)
def test_a_subscription_endpoint_that_is_not_public_https_is_refused(
    api, world, app, contact, endpoint, dns_unavailable
):
    response = register(
        api,
        world,
        {
            "app_id": str(app.id),
            "platform": "webpush",
            "subscription": keys.subscription(endpoint),
            "contact_id": str(contact.id),
        },
    )

    assert_400_at(response, "subscription.endpoint")
    assert not PushInstallation.objects.exists()
    # Refused for what the URL says: no DNS server was asked.
    assert dns_unavailable == []


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://updates.push.services.mozilla.com/wpush/v2/abc",
        "https://push.sendrealm.invalid/wpush",
        # What a name resolves to is checked at delivery (test_push_delivery).
        "https://sneaky.example.com/push",
    ],
)
def test_a_subscription_endpoint_is_registered_without_asking_dns(
    api, world, app, contact, endpoint, dns_unavailable
):
    response = register(
        api,
        world,
        {
            "app_id": str(app.id),
            "platform": "webpush",
            "subscription": keys.subscription(endpoint),
            "contact_id": str(contact.id),
        },
    )

    assert response.status_code == 201, response.content
    assert PushInstallation.objects.get().token == endpoint
    assert dns_unavailable == []


def test_a_subscription_endpoint_whose_name_does_not_resolve_is_registered(
    api, world, app, contact
):
    # The system's resolver: names under `.invalid` never resolve.
    netguard.set_resolver(None)

    response = register(
        api,
        world,
        {
            "app_id": str(app.id),
            "platform": "webpush",
            "subscription": keys.subscription("https://push.sendrealm.invalid/wpush"),
            "contact_id": str(contact.id),
        },
    )

    assert response.status_code == 201, response.content


def test_push_allow_http_lets_a_loopback_endpoint_through(api, world, app, contact, settings):
    settings.PUSH_ALLOW_HTTP = True

    response = register(
        api,
        world,
        {
            "app_id": str(app.id),
            "platform": "webpush",
            "subscription": keys.subscription("http://127.0.0.1:9000/push"),
            "contact_id": str(contact.id),
        },
    )

    assert response.status_code == 201


@pytest.mark.parametrize(
    ("keys_value", "path"),
    [
        ({"p256dh": "AAAA", "auth": "MDAwMDAwMDAwMDAwMDAwMA"}, "subscription.keys.p256dh"),
        ({"p256dh": None, "auth": "x"}, "subscription.keys.p256dh"),
        ("auth-too-short", "subscription.keys.auth"),
    ],
)
def test_malformed_subscription_keys_are_400(api, world, app, contact, keys_value, path):
    subscription = keys.subscription()
    if keys_value == "auth-too-short":
        subscription["keys"]["auth"] = "MDAw"
    else:
        subscription["keys"] = keys_value

    response = register(
        api,
        world,
        {
            "app_id": str(app.id),
            "platform": "webpush",
            "subscription": subscription,
            "contact_id": str(contact.id),
        },
    )

    assert_400_at(response, path)
    assert not PushInstallation.objects.exists()


WITH_CONTACT = {"contact_id": "00000000-0000-4000-8000-00000000c0de"}


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"platform": "fcm", "token": "t"}, ""),
        ({"platform": "fcm", **WITH_CONTACT}, ""),
        (
            {"platform": "fcm", "token": "t", "subscription": keys.subscription(), **WITH_CONTACT},
            "",
        ),
        ({"platform": "webpush", "token": "t", **WITH_CONTACT}, "subscription"),
        ({"platform": "apns", "token": "not-hex", **WITH_CONTACT}, "token"),
        ({"platform": "fcm", "token": "has space", **WITH_CONTACT}, "token"),
        ({"platform": "fax", "token": "t", **WITH_CONTACT}, "platform"),
    ],
)
def test_bad_registrations_are_400_and_store_nothing(api, world, app, body, path):
    ContactFactory(id=WITH_CONTACT["contact_id"], project=world.project)

    response = register(api, world, {"app_id": str(app.id), **body})

    assert_400_at(response, path)
    assert not PushInstallation.objects.exists()


def test_an_unknown_app_or_contact_is_400_at_its_member(api, world, app, contact):
    other_app = PushAppFactory(project=world.other_project)
    other_contact = ContactFactory(project=world.other_project)

    unknown_app = register(
        api,
        world,
        {
            "app_id": str(other_app.id),
            "platform": "fcm",
            "token": "t",
            "contact_id": str(contact.id),
        },
    )
    unknown_contact = register(
        api,
        world,
        {
            "app_id": str(app.id),
            "platform": "fcm",
            "token": "t",
            "contact_id": str(other_contact.id),
        },
    )
    unknown_app_by_email = register(
        api,
        world,
        {"app_id": "app_nothing", "platform": "fcm", "token": "t", "email": "new@example.com"},
    )

    assert_400_at(unknown_app, "app_id")
    assert_400_at(unknown_contact, "contact_id")
    assert_400_at(unknown_app_by_email, "app_id")
    assert not PushInstallation.objects.exists()
    assert not Contact.objects.filter(email="new@example.com").exists()


def test_a_read_only_or_sending_key_cannot_register(api, world, app, contact):
    body = {"app_id": str(app.id), "platform": "fcm", "token": "t", "contact_id": str(contact.id)}

    assert register(api, world, body, key="read_only").status_code == 403
    assert register(api, world, body, key="sending").status_code == 403
    assert not PushInstallation.objects.exists()


def test_deleting_an_installation_answers_it_as_it_was(api, world, app):
    installation = PushInstallationFactory(app=app, active=False)

    response = api.delete(f"/push/installations/{installation.id}", key=world.keys["project"])

    assert response.status_code == 200
    assert response.json()["data"]["id"] == str(installation.id)
    assert response.json()["data"]["active"] is False
    assert not PushInstallation.objects.exists()


def test_another_projects_installation_is_404(api, world):
    installation = PushInstallationFactory(app=PushAppFactory(project=world.other_project))

    response = api.delete(f"/push/installations/{installation.id}", key=world.keys["project"])

    assert response.status_code == 404
    assert PushInstallation.objects.filter(id=installation.id).exists()


def test_deleting_a_contact_forgets_its_installations(api, world, app, contact):
    PushInstallationFactory(app=app, contact=contact)

    assert api.delete(f"/contacts/{contact.id}", key=world.keys["project"]).status_code == 200

    assert not PushInstallation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_registrations_of_one_token_make_one_installation(api, world, app, contact):
    body = {
        "app_id": str(app.id),
        "platform": "fcm",
        "token": "same",
        "contact_id": str(contact.id),
    }
    barrier = threading.Barrier(6)
    statuses: list[int] = []

    def run() -> None:
        from tests.conftest import Api

        client = Api()
        barrier.wait()
        try:
            statuses.append(
                client.post("/push/installations", body, key=world.keys["project"]).status_code
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(statuses) == [200] * 5 + [201]
    assert PushInstallation.objects.count() == 1
