from typing import Any

from django.core.management.base import BaseCommand

from pushproviders.services.providers import push_provider_secrets_reencrypt


class Command(BaseCommand):
    help = (
        "Encrypts every stored push provider secret again with the first "
        "SECRETS_ENCRYPTION_KEY, so an old key can be dropped."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        rewritten, unreadable = push_provider_secrets_reencrypt()
        self.stdout.write(f"providers rewritten: {rewritten}; unreadable secrets: {unreadable}")
