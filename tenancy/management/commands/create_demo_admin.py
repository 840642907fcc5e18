"""Creates the demo staff login for the admin, with a random password printed once."""

import json
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenancy import conf

DEMO_ADMIN = "admin"
DEMO_ADMIN_EMAIL = "admin@example.com"


class Command(BaseCommand):
    help = (
        f"Create the staff superuser {DEMO_ADMIN!r} with a random password and print it "
        "once; local settings only (elsewhere: createsuperuser)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not conf.demo_admin_allowed():
            raise CommandError(
                "A login whose password is printed is for local development only; "
                "create a real one with `manage.py createsuperuser`."
            )
        password = secrets.token_urlsafe(16)
        _, created = get_user_model().objects.get_or_create(
            username=DEMO_ADMIN,
            defaults={
                "email": DEMO_ADMIN_EMAIL,
                "is_staff": True,
                "is_superuser": True,
                "password": make_password(password),
            },
        )
        # An existing login keeps its password: it was shown once, when it was created.
        shown = password if created else None
        if options["json"]:
            self.stdout.write(json.dumps({"username": DEMO_ADMIN, "password": shown}))
        elif created:
            self.stdout.write(
                f"Created the staff login {DEMO_ADMIN}, password (shown once): {shown}"
            )
        else:
            self.stdout.write(
                f"The login {DEMO_ADMIN} exists already; `manage.py changepassword "
                f"{DEMO_ADMIN}` sets a new password."
            )
