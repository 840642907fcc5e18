"""The service runs on PostgreSQL with Redis (or Valkey) as its shared cache and broker, and
nothing else: every settings module stops a start without them, or with a URL of another
kind, with one line saying what to set; the local settings find `make run`'s servers
through the file it writes while it runs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.settings.connections import PREPARE_ONLY_WHEN_ASKED
from tests.processes import ROOT

PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    "DJANGO_SECRET_KEY": "production-secret",
    "SECRETS_ENCRYPTION_KEY": "LyYc3e9MyEYvJ-tQNrOPkDfRcgmXz6XMMig0uKvhWBw=",
    "DATABASE_URL": "postgres://u:p@db.example.com:5432/sendrealm",
    "CACHE_URL": "redis://cache.example.com:6379/0",
    "CELERY_BROKER_URL": "redis://broker.example.com:6379/1",
}
LOCAL = {"DJANGO_SETTINGS_MODULE": "config.settings.local"}
TEST = {"DJANGO_SETTINGS_MODULE": "config.settings.test"}
NOT_SET_LOCALLY = (
    "error: DATABASE_URL, CACHE_URL and CELERY_BROKER_URL are not set: start `make run` (its "
    "PostgreSQL and Valkey then serve these commands too), or set DATABASE_URL, CACHE_URL and "
    "CELERY_BROKER_URL"
)


def check(env: dict[str, str], run_dir: Path) -> subprocess.CompletedProcess[str]:
    """`manage.py check` with only `env` (and RUN_DIR) set: no variable of the test run's."""
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", ""), "RUN_DIR": str(run_dir), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (LOCAL, NOT_SET_LOCALLY),
        (
            {**LOCAL, "DATABASE_URL": "sqlite:///db.sqlite3"},
            "error: CACHE_URL and CELERY_BROKER_URL are not set: start `make run` (its "
            "PostgreSQL and Valkey then serve these commands too), or set DATABASE_URL, "
            "CACHE_URL and CELERY_BROKER_URL",
        ),
        (
            {**PRODUCTION, "DATABASE_URL": "sqlite:///db.sqlite3"},
            "error: DATABASE_URL must be a PostgreSQL URL "
            "(postgres://user:password@127.0.0.1:5432/sendrealm), not sqlite://",
        ),
        (
            {**PRODUCTION, "CACHE_URL": ""},
            "error: CACHE_URL is not set: the production settings take every connection from "
            "the environment",
        ),
        (
            {key: value for key, value in PRODUCTION.items() if key != "CELERY_BROKER_URL"},
            "error: CELERY_BROKER_URL is not set: the production settings take every "
            "connection from the environment",
        ),
        (
            {**PRODUCTION, "CACHE_URL": "locmem://"},
            "error: CACHE_URL must be a Redis or Valkey URL (redis://127.0.0.1:6379/0), "
            "not locmem://",
        ),
        (
            {**PRODUCTION, "CELERY_BROKER_URL": "filesystem://"},
            "error: CELERY_BROKER_URL must be a Redis or Valkey URL "
            "(redis://127.0.0.1:6379/1), not filesystem://",
        ),
        (
            {**TEST, "DATABASE_URL": "mysql://u:secret@127.0.0.1/sendrealm"},
            "error: DATABASE_URL must be a PostgreSQL URL "
            "(postgres://user:password@127.0.0.1:5432/sendrealm), not mysql://",
        ),
        (
            {**PRODUCTION, "DATABASE_POOLER": "statement"},
            "error: DATABASE_POOLER must be none or transaction, not 'statement'",
        ),
    ],
    ids=[
        "local-nothing",
        "local-sqlite",
        "production-sqlite",
        "production-no-cache",
        "production-no-broker",
        "production-locmem",
        "production-filesystem-broker",
        "test-mysql",
        "production-statement-pooler",
    ],
)
def test_a_start_without_postgresql_and_redis_stops_with_one_line(env, line, tmp_path):
    result = check(env, tmp_path)

    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.strip() == line, result.stderr
    assert "secret" not in result.stderr


def test_the_test_settings_default_to_the_services_on_127_0_0_1(tmp_path):
    result = check(TEST, tmp_path)

    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_the_local_settings_use_the_urls_make_run_writes_while_it_runs(tmp_path):
    urls = {
        "DATABASE_URL": "postgres://postgres:pw@127.0.0.1:5999/sendrealm",
        "CACHE_URL": "redis://:pw@127.0.0.1:6999/0",
        "CELERY_BROKER_URL": "redis://:pw@127.0.0.1:6999/1",
    }
    (tmp_path / "services.env").write_text("".join(f"{k}={v}\n" for k, v in urls.items()))
    show = (
        "from django.conf import settings as s; "
        "print(s.DATABASES['default']['PORT'], s.CACHES['default']['LOCATION'], "
        "s.CELERY_BROKER_URL)"
    )

    result = subprocess.run(
        [sys.executable, "-c", show],
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", ""), "RUN_DIR": str(tmp_path), **LOCAL},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["5999", urls["CACHE_URL"], urls["CELERY_BROKER_URL"]]
    # The environment still wins over the file.
    assert check({**LOCAL, **urls, "DATABASE_URL": "sqlite:///x"}, tmp_path).returncode == 1


@pytest.mark.parametrize(
    ("pooler", "seen"),
    [
        ({}, [str(PREPARE_ONLY_WHEN_ASKED), "False"]),
        ({"DATABASE_POOLER": "transaction"}, ["None", "True"]),
    ],
    ids=["unset", "transaction"],
)
def test_behind_a_transaction_pooler_nothing_is_prepared_and_no_cursor_outlives_its_statement(
    pooler, seen, tmp_path
):
    show = (
        "from django.conf import settings as s; d = s.DATABASES['default']; "
        "print(d['OPTIONS']['prepare_threshold'], d.get('DISABLE_SERVER_SIDE_CURSORS', False))"
    )

    result = subprocess.run(
        [sys.executable, "-c", show],
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", ""), "RUN_DIR": str(tmp_path), **PRODUCTION, **pooler},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == seen
