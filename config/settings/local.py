"""Local development: `make run`, and the commands run beside it."""

from config.settings import connections
from config.settings.base import *  # noqa: F403 (each environment extends every base setting)
from config.settings.base import BASE_DIR, env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
# `make run` creates a staff login for the admin on first start and prints its password.
DEMO_ADMIN_ALLOWED = True

# Where `make run` keeps the data of its embedded PostgreSQL and Valkey (relative to the
# repository root). While it runs, RUN_DIR/services.env holds the URLs it gives its
# processes; commands run beside it (manage.py bootstrap, createsuperuser) use them when
# the environment sets none.
RUN_DIR = BASE_DIR / env.str("RUN_DIR", default=".run")
_urls = connections.urls(
    env,
    defaults=connections.run_file_urls(RUN_DIR / "services.env"),
    missing=(
        "start `make run` (its PostgreSQL and Valkey then serve these commands too), "
        "or set DATABASE_URL, CACHE_URL and CELERY_BROKER_URL"
    ),
)
DATABASES = {"default": connections.database(env, _urls["DATABASE_URL"])}
CACHES = {"default": connections.cache(_urls["CACHE_URL"])}
CELERY_BROKER_URL = connections.redis_url("CELERY_BROKER_URL", _urls["CELERY_BROKER_URL"])
