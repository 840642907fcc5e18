"""The test suite: PostgreSQL and Redis on 127.0.0.1 unless the environment says otherwise."""

from config.settings import connections
from config.settings.base import *  # noqa: F403 (each environment extends every base setting)
from config.settings.base import env

_urls = connections.urls(
    env,
    defaults={
        "DATABASE_URL": "postgres://postgres:postgres@127.0.0.1:5432/sendrealm",
        "CACHE_URL": "redis://127.0.0.1:6379/0",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/1",
    },
    missing="",
)
DATABASES = {"default": connections.database(env, _urls["DATABASE_URL"], conn_max_age=0)}
DATABASES["default"]["TEST"] = {"NAME": env.str("TEST_DATABASE_NAME", default="") or None}
CACHES = {
    "default": {
        **connections.cache(_urls["CACHE_URL"]),
        "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="test"),
    }
}
CELERY_BROKER_URL = connections.redis_url("CELERY_BROKER_URL", _urls["CELERY_BROKER_URL"])
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGGING["root"]["level"] = "WARNING"
# In-process drains in tests need not wait for web processes' wake-up debounce; the one
# test of that wait sets it itself.
EVENTS_WAKE_SETTLE_SECONDS = 0
# Tests freeze the clock, so every request of a test falls in one second of the rate
# limiter's window; the tests of the limiter set their own limits.
API_RATE_LIMIT = 100_000
# Counts reach Redis when a test flushes them (usage_flush), not on a timer.
USAGE_FLUSH_SECONDS = 3600.0
AUTOMATIONS_WAKE_SETTLE_SECONDS = 0
