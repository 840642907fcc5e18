"""Production: secrets and services come from the environment, nothing has a default."""

from config.secrets import keys_parsed
from config.settings.base import *  # noqa: F403
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

# No embedded fallbacks here: SQLite, the filesystem broker and a per-process cache are for
# one machine. Key and project lookups are cached, so every process must share the cache.
for _required in ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL"):
    env.str(_required)
