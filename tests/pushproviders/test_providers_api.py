"""Push providers over HTTP: `GET|POST /push/apps/{id}/providers`,
`PATCH|DELETE /push/providers/{id}`; readiness per platform, secrets write-only."""

import json
import logging

import pytest

from bench import keys
from config.net import netguard
from config.runtime import secrets
from pushproviders.models import PushProvider
from tests.pushproviders.conftest import NOT_PUBLIC_BY_THEMSELVES
from tests.pushproviders.factories import (
    PushAppFactory,
    PushInstallationFactory,
    PushProviderFactory,
)

pytestmark = pytest.mark.django_db

PROVIDER_MEMBERS = {
    "id",
    "app_id",
    "name",
    "platform",
    "status",
    "fcm_project_id",
    "android_package_name",
    "apns_key_id",
    "apns_team_id",
    "apns_bundle_id",
    "apns_environment",
    "web_vapid_public_key",
    "web_vapid_subject",
    "readiness",
    "created_at",
    "updated_at",
}


@pytest.fixture
def app(world):
    return PushAppFactory(project=world.project)


def add(api, world, app, body, key="project"):
    return api.post(f"/push/apps/{app.id}/providers", body, key=world.keys[key])


def issue_paths(response) -> list[str]:
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "validation_error"
    return [issue["path"] for issue in response.json()["error"]["issues"]]


def assert_no_secret(text: str, *secret_texts: str) -> None:
    assert "PRIVATE KEY" not in text
    for secret in secret_texts:
        assert secret not in text


# --- readiness per platform -------------------------------------------------------------


def test_an_fcm_provider_without_a_service_account_is_not_ready(api, world, app):
    response = add(api, world, app, {"platform": "fcm"})

    assert response.status_code == 201
    data = response.json()["data"]
    assert set(data) == PROVIDER_MEMBERS
    assert data["readiness"] == {"ready": False, "missing": ["service_account"]}
    assert data["name"] == "Firebase Cloud Messaging"
    assert data["status"] == "active"
    assert data["apns_environment"] is None
    assert data["app_id"] == str(app.id)


@pytest.mark.parametrize(
    "account", [keys.service_account(), keys.service_account_text()], ids=["object", "string"]
)
def test_a_service_account_as_object_or_string_makes_fcm_ready(api, world, app, account):
    response = add(
        api, world, app, {"platform": "fcm", "service_account": account, "name": "Android"}
    )

    data = response.json()["data"]
    assert data["readiness"] == {"ready": True, "missing": []}
    assert data["fcm_project_id"] == "demo-app-123"
    stored = PushProvider.objects.get()
    assert json.loads(secrets.decrypt(stored.service_account_encrypted))["client_email"] == (
        "push@demo-app-123.iam.gserviceaccount.com"
    )
    assert_no_secret(response.content.decode(), keys.rsa_pem().splitlines()[1])


def test_apns_readiness_lists_each_missing_setting_until_all_are_given(api, world, app):
    created = add(api, world, app, {"platform": "apns", "apns_environment": "sandbox"})
    provider_id = created.json()["data"]["id"]
    assert created.json()["data"]["readiness"]["missing"] == [
        "apns_key_id",
        "apns_team_id",
        "apns_private_key",
        "apns_bundle_id",
    ]
    assert created.json()["data"]["apns_environment"] == "sandbox"

    steps = [
        ({"apns_key_id": "ABC123DEFG"}, ["apns_team_id", "apns_private_key", "apns_bundle_id"]),
        ({"apns_team_id": "TEAM123456"}, ["apns_private_key", "apns_bundle_id"]),
        ({"apns_private_key": keys.apns_p8()}, ["apns_bundle_id"]),
        ({"apns_bundle_id": "com.example.shop"}, []),
    ]
    for body, missing in steps:
        response = api.patch(f"/push/providers/{provider_id}", body, key=world.keys["project"])
        assert response.status_code == 200, response.content
        assert response.json()["data"]["readiness"] == {"ready": not missing, "missing": missing}
        assert_no_secret(response.content.decode(), keys.apns_p8().splitlines()[1])


def test_webpush_readiness_needs_both_keys_and_a_subject(api, world, app):
    private, public = keys.vapid_pair()

    created = add(api, world, app, {"platform": "webpush", "web_vapid_public_key": public})
    provider_id = created.json()["data"]["id"]
    assert created.json()["data"]["readiness"]["missing"] == [
        "web_vapid_private_key",
        "web_vapid_subject",
    ]

    response = api.patch(
        f"/push/providers/{provider_id}",
        {"web_vapid_private_key": private, "web_vapid_subject": "mailto:ops@example.com"},
        key=world.keys["project"],
    )

    data = response.json()["data"]
    assert data["readiness"] == {"ready": True, "missing": []}
    assert data["web_vapid_public_key"] == public
    assert private not in response.content.decode()


def test_generate_vapid_keys_stores_a_new_pair_and_answers_the_public_key(api, world, app):
    response = add(
        api,
        world,
        app,
        {
            "platform": "webpush",
            "generate_vapid_keys": True,
            "web_vapid_subject": "https://example.com/contact",
        },
    )

    data = response.json()["data"]
    assert data["readiness"] == {"ready": True, "missing": []}
    stored = PushProvider.objects.get()
    private = secrets.decrypt(stored.web_vapid_private_key_encrypted)
    assert private not in response.content.decode()
    from pushproviders.credentials import vapid_public_key_of

    assert vapid_public_key_of(private) == data["web_vapid_public_key"]


def test_a_private_vapid_key_alone_gives_its_public_key(api, world, app):
    private, public = keys.vapid_pair()

    response = add(api, world, app, {"platform": "webpush", "web_vapid_private_key": private})

    assert response.json()["data"]["web_vapid_public_key"] == public


def test_a_stored_secret_no_key_decrypts_counts_as_missing(api, world, app):
    provider = PushProviderFactory(app=app, service_account_encrypted="gAAAAAbroken")

    response = api.get(f"/push/apps/{app.id}/providers", key=world.keys["read_only"])

    [data] = response.json()["data"]
    assert data["id"] == str(provider.id)
    assert data["readiness"] == {"ready": False, "missing": ["service_account"]}


# --- lookups ----------------------------------------------------------------------------


def test_providers_are_listed_by_public_id_installation_id_or_uuid(api, world, app):
    fcm = PushProviderFactory(app=app)
    apns = PushProviderFactory(app=app, platform="apns", name="iOS")
    PushProviderFactory(app=PushAppFactory(project=world.project))
    installation = PushInstallationFactory(app=app)

    answers = [
        api.get(f"/push/apps/{ref}/providers", key=world.keys["read_only"])
        for ref in (app.public_id, installation.id, app.id, str(app.id).upper())
    ]

    for response in answers:
        assert response.status_code == 200
        assert [p["id"] for p in response.json()["data"]] == [str(fcm.id), str(apns.id)]


@pytest.mark.parametrize("ref", ["app_unknown", "00000000-0000-4000-8000-000000000000", "x"])
def test_an_unknown_app_reference_is_404(api, world, ref):
    response = api.get(f"/push/apps/{ref}/providers", key=world.keys["project"])

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_another_projects_app_or_installation_is_404(api, world):
    app = PushAppFactory(project=world.other_project)
    installation = PushInstallationFactory(app=app)
    PushProviderFactory(app=app)

    for ref in (app.id, app.public_id, installation.id):
        response = api.get(f"/push/apps/{ref}/providers", key=world.keys["project"])
        assert response.status_code == 404
    assert add(api, world, app, {"platform": "fcm"}).status_code == 404
    assert PushProvider.objects.count() == 1


# --- changes ----------------------------------------------------------------------------


def test_patch_status_disabled_disables_the_provider(api, world, app):
    provider = PushProviderFactory(app=app)

    response = api.patch(
        f"/push/providers/{provider.id}", {"status": "disabled"}, key=world.keys["project"]
    )

    assert response.status_code == 200
    assert response.json()["data"]["status"] == "disabled"
    provider.refresh_from_db()
    assert provider.status == "disabled"


def test_a_setting_set_to_null_is_cleared(api, world, app):
    created = add(api, world, app, {"platform": "fcm", "service_account": keys.service_account()})
    provider_id = created.json()["data"]["id"]

    response = api.patch(
        f"/push/providers/{provider_id}", {"service_account": None}, key=world.keys["project"]
    )

    assert response.json()["data"]["readiness"]["missing"] == ["service_account"]
    assert response.json()["data"]["fcm_project_id"] is None


def test_a_second_provider_for_a_platform_is_409(api, world, app):
    PushProviderFactory(app=app)

    response = add(api, world, app, {"platform": "fcm"})

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert PushProvider.objects.count() == 1


def test_deleting_a_provider_answers_it(api, world, app):
    provider = PushProviderFactory(app=app)

    response = api.delete(f"/push/providers/{provider.id}", key=world.keys["project"])

    assert response.status_code == 200
    assert response.json()["data"]["id"] == str(provider.id)
    assert not PushProvider.objects.exists()


def test_another_projects_provider_cannot_be_changed_or_deleted(api, world):
    provider = PushProviderFactory(app=PushAppFactory(project=world.other_project))

    patched = api.patch(
        f"/push/providers/{provider.id}", {"status": "disabled"}, key=world.keys["project"]
    )
    deleted = api.delete(f"/push/providers/{provider.id}", key=world.keys["project"])

    assert patched.status_code == deleted.status_code == 404
    provider.refresh_from_db()
    assert provider.status == "active"


def test_a_read_only_key_cannot_add_or_change_providers(api, world, app):
    provider = PushProviderFactory(app=app)

    added = add(api, world, app, {"platform": "apns"}, key="read_only")
    changed = api.patch(
        f"/push/providers/{provider.id}", {"status": "disabled"}, key=world.keys["read_only"]
    )

    assert added.status_code == changed.status_code == 403
    assert PushProvider.objects.get().status == "active"


# --- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("account", "path"),
    [
        ("not json", "service_account"),
        ("[1, 2]", "service_account"),
        (42, "service_account"),
        (keys.service_account(client_email=None), "service_account.client_email"),
        (keys.service_account(private_key=None), "service_account.private_key"),
        (keys.service_account(token_uri=None), "service_account.token_uri"),
        (keys.service_account(project_id=""), "service_account.project_id"),
        (
            keys.service_account(
                private_key="-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
            ),
            "service_account.private_key",
        ),
        (
            keys.service_account(token_uri="http://oauth2.googleapis.com/token"),
            "service_account.token_uri",
        ),
        (keys.service_account(token_uri="https://127.0.0.1/token"), "service_account.token_uri"),
        (keys.service_account(token_uri="https://[::1]/token"), "service_account.token_uri"),
    ],
)
def test_a_malformed_service_account_is_400_and_stores_nothing(api, world, app, account, path):
    response = add(api, world, app, {"platform": "fcm", "service_account": account})

    assert path in issue_paths(response)
    assert not PushProvider.objects.exists()
    assert keys.rsa_pem().splitlines()[1] not in response.content.decode()


def test_every_missing_member_of_a_service_account_is_reported_at_once(api, world, app):
    account = keys.service_account(client_email=None, private_key="  ", token_uri=None)

    response = add(api, world, app, {"platform": "fcm", "service_account": account})

    assert issue_paths(response) == [
        "service_account.client_email",
        "service_account.private_key",
        "service_account.token_uri",
    ]
    assert {issue["code"] for issue in response.json()["error"]["issues"]} == {"invalid"}
    assert not PushProvider.objects.exists()


def test_a_service_account_s_problems_of_every_kind_are_reported_together(api, world, app):
    account = keys.service_account(
        project_id=None,
        type="user",
        private_key="-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        token_uri="http://oauth2.googleapis.com/token",
    )

    response = add(
        api,
        world,
        app,
        {"platform": "fcm", "service_account": account, "android_package_name": "not a name"},
    )

    assert issue_paths(response) == [
        "android_package_name",
        "service_account.project_id",
        "service_account.type",
        "service_account.private_key",
        "service_account.token_uri",
    ]
    assert keys.rsa_pem().splitlines()[1] not in response.content.decode()


@pytest.mark.parametrize(
    "token_uri",
    [
        "https://oauth2.googleapis.com/token",
        "https://oauth2.sendrealm.invalid/token",
        # What a name resolves to is checked when the token is fetched (test_push_delivery).
        "https://intranet.example.com/token",
    ],
)
def test_a_token_uri_is_registered_without_asking_dns(api, world, app, dns_unavailable, token_uri):
    account = keys.service_account(token_uri=token_uri)

    response = add(api, world, app, {"platform": "fcm", "service_account": account})

    assert response.status_code == 201, response.content
    assert dns_unavailable == []


def test_a_token_uri_whose_name_does_not_resolve_is_registered(api, world, app):
    # The system's resolver: names under `.invalid` never resolve.
    netguard.set_resolver(None)
    account = keys.service_account(token_uri="https://oauth2.sendrealm.invalid/token")

    response = add(api, world, app, {"platform": "fcm", "service_account": account})

    assert response.status_code == 201, response.content


@pytest.mark.parametrize("token_uri", NOT_PUBLIC_BY_THEMSELVES)
def test_a_token_uri_that_is_not_public_by_itself_is_refused_without_dns(
    api, world, app, dns_unavailable, token_uri
):
    account = keys.service_account(token_uri=token_uri)

    response = add(api, world, app, {"platform": "fcm", "service_account": account})

    assert issue_paths(response) == ["service_account.token_uri"]
    assert "not public" in response.json()["error"]["issues"][0]["message"]
    assert not PushProvider.objects.exists()
    assert dns_unavailable == []


def test_push_allow_http_lets_a_loopback_token_uri_through(api, world, app, settings):
    settings.PUSH_ALLOW_HTTP = True
    account = keys.service_account(token_uri="http://127.0.0.1:9999/token")

    response = add(api, world, app, {"platform": "fcm", "service_account": account})

    assert response.status_code == 201
    assert response.json()["data"]["readiness"]["ready"] is True


@pytest.mark.parametrize(
    "key_text",
    [
        "not a key",
        keys.rsa_pem(),
        keys.p384_pem(),
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    ],
    ids=["text", "rsa", "p384", "garbage"],
)
def test_an_apns_key_that_is_not_an_ec_p256_pem_is_400(api, world, app, key_text):
    response = add(api, world, app, {"platform": "apns", "apns_private_key": key_text})

    assert issue_paths(response) == ["apns_private_key"]
    assert not PushProvider.objects.exists()


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"web_vapid_private_key": "short"}, "web_vapid_private_key"),
        ({"web_vapid_private_key": "!" * 43}, "web_vapid_private_key"),
        ({"web_vapid_public_key": "AAAA"}, "web_vapid_public_key"),
        ({"web_vapid_public_key": "BA" + "A" * 85}, "web_vapid_public_key"),
        ({"web_vapid_subject": "ops@example.com"}, "web_vapid_subject"),
        ({"generate_vapid_keys": "yes"}, "generate_vapid_keys"),
    ],
)
def test_a_malformed_vapid_setting_is_400(api, world, app, body, path):
    response = add(api, world, app, {"platform": "webpush", **body})

    assert path in issue_paths(response)
    assert not PushProvider.objects.exists()


def test_a_vapid_public_key_that_does_not_match_the_private_one_is_400(api, world, app):
    private, _ = keys.vapid_pair()
    _, other_public = keys.vapid_key_pair_fresh()

    response = add(
        api,
        world,
        app,
        {
            "platform": "webpush",
            "web_vapid_private_key": private,
            "web_vapid_public_key": other_public,
        },
    )

    assert issue_paths(response) == ["web_vapid_public_key"]


def test_settings_of_another_platform_are_refused(api, world, app):
    response = add(
        api,
        world,
        app,
        {"platform": "fcm", "apns_key_id": "ABC123DEFG", "generate_vapid_keys": True},
    )

    assert sorted(issue_paths(response)) == ["apns_key_id", "generate_vapid_keys"]


def test_a_providers_platform_cannot_change(api, world, app):
    provider = PushProviderFactory(app=app)

    response = api.patch(
        f"/push/providers/{provider.id}", {"platform": "apns"}, key=world.keys["project"]
    )

    assert issue_paths(response) == ["platform"]


def test_a_bad_patch_changes_nothing_it_was_given(api, world, app):
    created = add(api, world, app, {"platform": "apns", "apns_key_id": "ABC123DEFG"})
    provider_id = created.json()["data"]["id"]

    response = api.patch(
        f"/push/providers/{provider_id}",
        {"apns_team_id": "TEAM123456", "apns_private_key": "nope"},
        key=world.keys["project"],
    )

    assert issue_paths(response) == ["apns_private_key"]
    assert PushProvider.objects.get().apns_team_id == ""


def test_secrets_never_reach_the_logs(api, world, app, caplog):
    caplog.set_level(logging.DEBUG)
    private, _ = keys.vapid_pair()

    add(api, world, app, {"platform": "fcm", "service_account": keys.service_account()})
    add(api, world, app, {"platform": "apns", "apns_private_key": keys.apns_p8()})
    add(api, world, app, {"platform": "webpush", "web_vapid_private_key": private})
    add(api, world, app, {"platform": "fcm", "service_account": "broken " + private})

    assert_no_secret(caplog.text, private, keys.rsa_pem().splitlines()[1])
