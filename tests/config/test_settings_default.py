"""Which settings a process gets when DJANGO_SETTINGS_MODULE is not set: the production ones
for what a server runs (granian's `config.rsgi` and `config.wsgi`, `celery -A config`),
which refuse to start without their secrets; the local ones for `manage.py`. Each case is a
fresh interpreter with only the variables it names."""

import os
import subprocess
import sys

import pytest

from tests.processes import ROOT

CONNECTIONS = {
    "DATABASE_URL": os.environ.get(
        "DATABASE_URL", "postgres://postgres:postgres@127.0.0.1:5432/sendrealm"
    ),
    "CACHE_URL": os.environ.get("CACHE_URL", "redis://127.0.0.1:6379/0"),
    "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/1"),
}
SECRETS = {
    "DJANGO_SECRET_KEY": "a-production-secret-of-the-test",
    "SECRETS_ENCRYPTION_KEY": "LyYc3e9MyEYvJ-tQNrOPkDfRcgmXz6XMMig0uKvhWBw=",
}
SHOW = (
    "from django.conf import settings; "
    "print(settings.SETTINGS_MODULE, settings.DEBUG, settings.SECRET_KEY == {secret!r})"
)


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert "DJANGO_SETTINGS_MODULE" not in env
    return subprocess.run(
        args,
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", ""), "RUN_DIR": "/nonexistent", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("entry_point", ["config.rsgi", "config.wsgi", "config"])
def test_a_server_entry_point_defaults_to_the_production_settings(entry_point):
    show = SHOW.format(secret=SECRETS["DJANGO_SECRET_KEY"])

    result = run(
        [sys.executable, "-c", f"import {entry_point}; {show}"], {**CONNECTIONS, **SECRETS}
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["config.settings.production", "False", "True"]


def test_a_server_started_without_its_secrets_stops_instead_of_running_local_settings():
    result = run([sys.executable, "-c", "import config.rsgi"], CONNECTIONS)

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_manage_py_defaults_to_the_local_settings():
    show = SHOW.format(secret=SECRETS["DJANGO_SECRET_KEY"])

    result = run([sys.executable, "manage.py", "shell", "-v", "0", "-c", show], CONNECTIONS)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["config.settings.local", "True", "False"]
