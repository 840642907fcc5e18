"""Production: secrets and services come from the environment, nothing has a default."""

from config.runtime.secrets import keys_parsed
from config.settings import connections
from config.settings.base import *  # noqa: F403 (each environment extends every base setting)
from config.settings.base import env

SECRET_KEY = env.str("DJANGO_SECRET_KEY")
# Never derived here: stored secrets must survive a change of SECRET_KEY. A malformed key
# stops the start, not the first decryption.
SECRETS_ENCRYPTION_KEY = env.str("SECRETS_ENCRYPTION_KEY")
keys_parsed(SECRETS_ENCRYPTION_KEY)
DEBUG = False
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True

# Every connection comes from the environment: PostgreSQL, and Redis or Valkey shared by
# every process (key and project lookups are cached, so every process must share the cache).
_urls = connections.urls(
    env,
    defaults={},
    missing="the production settings take every connection from the environment",
)
DATABASES = {"default": connections.database(env, _urls["DATABASE_URL"])}
CACHES = {"default": connections.cache(_urls["CACHE_URL"])}
CELERY_BROKER_URL = connections.redis_url("CELERY_BROKER_URL", _urls["CELERY_BROKER_URL"])
