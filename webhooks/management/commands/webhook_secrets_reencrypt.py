from typing import Any

from django.core.management.base import BaseCommand

from webhooks.services.endpoints import webhook_secrets_reencrypt


class Command(BaseCommand):
    help = (
        "Encrypts every stored webhook endpoint secret again with the first "
        "SECRETS_ENCRYPTION_KEY, so an old key can be dropped."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        rewritten, unreadable = webhook_secrets_reencrypt()
        self.stdout.write(f"endpoints rewritten: {rewritten}; unreadable secrets: {unreadable}")
