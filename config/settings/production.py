"""Production: secrets and services come from the environment, nothing has a default."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

SECRET_KEY = env.str("DJANGO_SECRET_KEY")
DEBUG = False
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
