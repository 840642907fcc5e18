"""Local development: `make run`."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
# `make run` creates a staff login for the admin on first start and prints its password.
DEMO_ADMIN_ALLOWED = True
