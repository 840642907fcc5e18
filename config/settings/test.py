"""The test suite: PostgreSQL and Redis on 127.0.0.1 unless the environment says otherwise."""

import os
from urllib.parse import urlsplit, urlunsplit

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
# pytest-xdist runs the suite in worker processes gw0, gw1, ...; pytest-django gives each a
# test database of its own (`test_<name>_gw<n>`). Each takes Redis databases of its own too,
# since every test empties its cache database and the usage counters and the broker's
# queues have fixed names: worker n uses the cache's and the broker's database numbers plus
# 2n (with the defaults, gw1 uses 2 and 3). The environment then holds the worker's URLs,
# so the processes a test starts, which inherit it, use them as they are.
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
_REDIS_WORKER = "SENDREALM_TEST_REDIS_WORKER"


def _redis_url(name: str, url: str) -> str:
    if not _XDIST_WORKER.startswith("gw") or os.environ.get(_REDIS_WORKER) == _XDIST_WORKER:
        return url
    parts = urlsplit(url)
    database = int(parts.path.strip("/") or 0) + 2 * int(_XDIST_WORKER[2:])
    os.environ[name] = url = urlunsplit(parts._replace(path=f"/{database}"))
    return url


_CACHE_URL = _redis_url("CACHE_URL", _urls["CACHE_URL"])
_BROKER_URL = _redis_url("CELERY_BROKER_URL", _urls["CELERY_BROKER_URL"])
if _XDIST_WORKER:
    os.environ[_REDIS_WORKER] = _XDIST_WORKER

CACHES = {
    "default": {
        **connections.cache(_CACHE_URL),
        "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="test"),
    }
}
# A commit returns without waiting for the disk to sync its WAL (others see it at once;
# only a crash of the server could lose it): transactional tests and the processes the
# suite starts commit thousands of times.
_options = DATABASES["default"].setdefault("OPTIONS", {})
_options["options"] = f"{_options.get('options', '')} -c synchronous_commit=off".strip()
CELERY_BROKER_URL = connections.redis_url("CELERY_BROKER_URL", _BROKER_URL)
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
# Each tool call's audit row is written on its path, so a test reads it after the call;
# the tests of the buffer set their own interval (a served one through the environment).
AGENT_AUDIT_FLUSH_SECONDS = env.float("AGENT_AUDIT_FLUSH_SECONDS", default=0.0)
AUTOMATIONS_WAKE_SETTLE_SECONDS = 0
WEBHOOK_WAKE_SETTLE_SECONDS = 0
