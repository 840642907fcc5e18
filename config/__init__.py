"""The project package. Whatever imports it first without DJANGO_SETTINGS_MODULE gets the
production settings: granian (`config.rsgi`, `config.wsgi`) and `celery -A config`, the
commands a server runs. Those settings stop the start unless the secrets and every
connection are set, so a forgotten variable is an error, never a server running the
development settings (DEBUG on, a known SECRET_KEY). `manage.py`, `make run` and
`make worker` choose the local settings before they import it."""

import os

# Before the import below: config.celery reads the settings.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

from config.celery import app as celery_app

__all__ = ("celery_app",)
