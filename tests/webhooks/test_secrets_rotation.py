"""Rotating SECRETS_ENCRYPTION_KEY: endpoint secrets move to the new key and still sign."""

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command

from config.runtime import secrets
from tests.webhooks.factories import WebhookEndpointFactory
from webhooks.models import WebhookEndpoint
from webhooks.signing import secret_new

pytestmark = pytest.mark.django_db


def test_reencrypting_moves_endpoint_secrets_to_the_new_key(settings, world, capsys):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.SECRETS_ENCRYPTION_KEY = old
    current, previous = secret_new(), secret_new()
    endpoint = WebhookEndpointFactory(
        project=world.project,
        secret=secrets.encrypt(current),
        previous_secret=secrets.encrypt(previous),
    )
    unreadable = WebhookEndpointFactory(project=world.project, secret="not a fernet token")
    settings.SECRETS_ENCRYPTION_KEY = f"{new},{old}"

    call_command("webhook_secrets_reencrypt")

    assert "endpoints rewritten: 1; unreadable secrets: 1" in capsys.readouterr().out
    settings.SECRETS_ENCRYPTION_KEY = new
    endpoint.refresh_from_db()
    assert secrets.decrypt(endpoint.secret) == current
    assert secrets.decrypt(endpoint.previous_secret) == previous
    assert WebhookEndpoint.objects.get(pk=unreadable.pk).secret == "not a fernet token"
