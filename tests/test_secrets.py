"""Secrets at rest: Fernet encryption keyed by SECRETS_ENCRYPTION_KEY, with rotation."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from config.runtime import secrets

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def old_key() -> str:
    return Fernet.generate_key().decode()


@pytest.fixture
def new_key() -> str:
    return Fernet.generate_key().decode()


def test_a_secret_is_stored_as_a_token_that_decrypts_back():
    token = secrets.encrypt("-----BEGIN RSA PRIVATE KEY-----\nsecret")

    assert "secret" not in token
    assert "BEGIN" not in token
    assert secrets.decrypt(token) == "-----BEGIN RSA PRIVATE KEY-----\nsecret"


def test_the_same_secret_encrypts_differently_each_time():
    assert secrets.encrypt("same") != secrets.encrypt("same")


def test_an_altered_token_is_unreadable_not_garbage():
    token = secrets.encrypt("value")
    altered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")

    with pytest.raises(secrets.SecretUnreadable):
        secrets.decrypt(altered)
    with pytest.raises(secrets.SecretUnreadable):
        secrets.decrypt("not a token at all")


def test_a_key_list_encrypts_with_the_first_and_decrypts_with_any(settings, old_key, new_key):
    settings.SECRETS_ENCRYPTION_KEY = old_key
    stored = secrets.encrypt("dkim key")

    settings.SECRETS_ENCRYPTION_KEY = f"{new_key}, {old_key}"
    assert secrets.decrypt(stored) == "dkim key"
    fresh = secrets.encrypt("push key")
    assert Fernet(new_key.encode()).decrypt(fresh.encode()) == b"push key"

    settings.SECRETS_ENCRYPTION_KEY = new_key
    assert secrets.decrypt(fresh) == "push key"
    with pytest.raises(secrets.SecretUnreadable):
        secrets.decrypt(stored)


def test_reencrypting_moves_a_secret_to_the_first_key(settings, old_key, new_key):
    settings.SECRETS_ENCRYPTION_KEY = old_key
    stored = secrets.encrypt("dkim key")
    settings.SECRETS_ENCRYPTION_KEY = f"{new_key},{old_key}"

    rotated = secrets.reencrypt(stored)

    settings.SECRETS_ENCRYPTION_KEY = new_key
    assert secrets.decrypt(rotated) == "dkim key"


def test_a_malformed_key_is_a_configuration_error_that_does_not_show_it(settings):
    settings.SECRETS_ENCRYPTION_KEY = f"{Fernet.generate_key().decode()},not-a-real-key"

    with pytest.raises(ImproperlyConfigured) as caught:
        secrets.encrypt("value")

    assert "key 2" in str(caught.value)
    assert "not-a-real-key" not in str(caught.value)


def test_an_empty_key_list_is_a_configuration_error():
    with pytest.raises(ImproperlyConfigured):
        secrets.keys_parsed(" , ")


def test_the_development_key_is_derived_from_the_secret_key_and_stable():
    first = secrets.key_derived_from("one secret")

    assert first == secrets.key_derived_from("one secret")
    assert first != secrets.key_derived_from("another secret")
    Fernet(first.encode())  # a valid Fernet key


def test_local_and_test_settings_derive_their_key_from_the_secret_key():
    from config.settings import test as test_settings

    assert (
        secrets.key_derived_from(test_settings.SECRET_KEY) == test_settings.SECRETS_ENCRYPTION_KEY
    )


def production_settings(**env: str) -> subprocess.CompletedProcess:
    base = {
        "PATH": os.environ.get("PATH", ""),
        "DJANGO_SECRET_KEY": "production-secret",
        "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/db",
        "CACHE_URL": "redis://127.0.0.1:6379/0",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/1",
    }
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import config.settings.production as s; print(s.SECRETS_ENCRYPTION_KEY)",
        ],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_production_settings_refuse_to_start_without_an_encryption_key():
    result = production_settings()

    assert result.returncode != 0
    assert "SECRETS_ENCRYPTION_KEY" in result.stderr


def test_production_settings_refuse_a_malformed_encryption_key():
    result = production_settings(SECRETS_ENCRYPTION_KEY="too-short")

    assert result.returncode != 0
    assert "SECRETS_ENCRYPTION_KEY" in result.stderr


def test_production_settings_take_a_list_of_keys(old_key, new_key):
    result = production_settings(SECRETS_ENCRYPTION_KEY=f"{new_key},{old_key}")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{new_key},{old_key}"
