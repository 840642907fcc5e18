"""The service's three connections, read and checked once for every environment: PostgreSQL
(DATABASE_URL), and Redis or Valkey as the shared cache (CACHE_URL) and the Celery broker
(CELERY_BROKER_URL). Nothing else runs the service: a URL of another kind, or a missing
one, stops the start with one line saying what to set (not a traceback)."""

from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import environ

URL_NAMES = ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL")
POSTGRES_SCHEMES = ("postgres", "postgresql", "pgsql")
REDIS_SCHEMES = ("redis", "rediss")
# psycopg prepares a statement after this many runs on a connection, or at once when asked.
PREPARE_ONLY_WHEN_ASKED = 2**62
# What sits between the service and PostgreSQL (DATABASE_POOLER): nothing, or a pooler in
# transaction mode (PgBouncer's `pool_mode = transaction`), which may run each transaction
# on another server connection.
POOLERS = ("none", "transaction")
EXAMPLES = {
    "DATABASE_URL": "postgres://user:password@127.0.0.1:5432/sendrealm",
    "CACHE_URL": "redis://127.0.0.1:6379/0",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/1",
}


def stop(message: str) -> NoReturn:
    """Ends the process with `message` on stderr and status 1, whatever is loading the
    settings (manage.py, granian, Celery, pytest)."""
    raise SystemExit(f"error: {message}")


def run_file_urls(path: Path) -> dict[str, str]:
    """The URLs `make run` wrote to `path` (`NAME=value` lines) for as long as it runs."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name in URL_NAMES and value:
            found[name] = value
    return found


def urls(env: environ.Env, *, defaults: dict[str, str], missing: str) -> dict[str, str]:
    """Each URL from the environment, else from `defaults`; `missing` ends the line that
    names one found in neither (what to do about it)."""
    found = {name: env.str(name, default="") or defaults.get(name, "") for name in URL_NAMES}
    absent = [name for name in URL_NAMES if not found[name]]
    if absent:
        listed = " and ".join([", ".join(absent[:-1]), absent[-1]] if len(absent) > 1 else absent)
        stop(f"{listed} {'is' if len(absent) == 1 else 'are'} not set: {missing}")
    return found


def _scheme(url: str) -> str:
    return urlsplit(url).scheme.lower()


def pooler(env: environ.Env) -> str:
    """DATABASE_POOLER: `none` (PostgreSQL itself, or a pooler in session mode) or
    `transaction`; the settings stop on anything else."""
    value = env.str("DATABASE_POOLER", default="none").strip().lower() or "none"
    if value not in POOLERS:
        stop(f"DATABASE_POOLER must be {' or '.join(POOLERS)}, not {value!r}")
    return value


def database(env: environ.Env, url: str, *, conn_max_age: int | None = None) -> dict[str, Any]:
    """Django's DATABASES entry for a PostgreSQL URL."""
    if _scheme(url) not in POSTGRES_SCHEMES:
        stop(
            f"DATABASE_URL must be a PostgreSQL URL ({EXAMPLES['DATABASE_URL']}), "
            f"not {_scheme(url) or 'one without a scheme'}://"
        )
    config: dict[str, Any] = environ.Env.db_url_config(url)
    config["CONN_MAX_AGE"] = (
        env.int("DATABASE_CONN_MAX_AGE", default=60) if conn_max_age is None else conn_max_age
    )
    # A health check costs a `SELECT 1` round trip on every request; persistent connections
    # are recycled every CONN_MAX_AGE seconds anyway, so it is off unless asked for.
    config["CONN_HEALTH_CHECKS"] = env.bool("DATABASE_CONN_HEALTH_CHECKS", default=False)
    # Statements are prepared on the server only where the code asks (`prepare=True`, see
    # `config.db.bulk.statement_run`), never after some number of runs: Django's default
    # (None) turns psycopg's preparing off altogether, the explicit asks included.
    config.setdefault("OPTIONS", {}).setdefault("prepare_threshold", PREPARE_ONLY_WHEN_ASKED)
    if pooler(env) == "transaction":
        # Nothing may outlive a transaction on a server connection: the next transaction
        # may run on another one. A statement prepared on one is unknown to the others (and
        # its name taken on it by whichever client prepared first), so nothing is prepared,
        # the explicit asks included (None); and Django's `.iterator()` reads in chunks
        # from a cursor held open past its transaction, so it reads everything at once.
        config["OPTIONS"]["prepare_threshold"] = None
        config["DISABLE_SERVER_SIDE_CURSORS"] = True
    return config


def redis_url(name: str, url: str) -> str:
    """`url` when it names a Redis (or Valkey) server; the settings stop otherwise."""
    if _scheme(url) not in REDIS_SCHEMES:
        stop(
            f"{name} must be a Redis or Valkey URL ({EXAMPLES[name]}), "
            f"not {_scheme(url) or 'one without a scheme'}://"
        )
    return url


def cache(url: str) -> dict[str, Any]:
    """Django's CACHES entry: the Redis cache every process shares."""
    config: dict[str, Any] = environ.Env.cache_url_config(redis_url("CACHE_URL", url))
    return config
