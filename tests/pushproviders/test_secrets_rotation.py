import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command

from bench import keys
from config.runtime import secrets
from pushproviders.readiness import provider_readiness
from tests.pushproviders.factories import PushProviderFactory

pytestmark = pytest.mark.django_db


def test_reencrypting_moves_provider_secrets_to_the_new_key(settings, world, capsys):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.SECRETS_ENCRYPTION_KEY = old
    provider = PushProviderFactory(
        app__project=world.project,
        platform="apns",
        apns_key_id="ABC123DEFG",
        apns_team_id="TEAM123456",
        apns_bundle_id="com.example.app",
        apns_private_key_encrypted=secrets.encrypt(keys.apns_p8()),
    )
    settings.SECRETS_ENCRYPTION_KEY = f"{new},{old}"

    call_command("push_secrets_reencrypt")

    assert "providers rewritten: 1; unreadable secrets: 0" in capsys.readouterr().out
    settings.SECRETS_ENCRYPTION_KEY = new
    provider.refresh_from_db()
    assert provider_readiness(provider).ready


def test_a_provider_whose_key_was_dropped_is_not_ready_and_says_why(settings, world):
    settings.SECRETS_ENCRYPTION_KEY = Fernet.generate_key().decode()
    provider = PushProviderFactory(
        app__project=world.project,
        service_account_encrypted=secrets.encrypt(keys.service_account_text()),
    )
    settings.SECRETS_ENCRYPTION_KEY = Fernet.generate_key().decode()

    readiness = provider_readiness(provider)

    assert readiness.missing == ["service_account"]
    assert "decrypt" in readiness.reasons["service_account"]
