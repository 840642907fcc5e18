"""`make test`'s services (scripts/ensure-services.sh): a command runs against PostgreSQL and
Redis where they answer, and against the embedded servers of `make run` in place of any on
127.0.0.1 that does not, which stop when it ends."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.processes import ROOT, free_port, scratch_dir

# What the command sees: its URLs, and what answers behind them.
SHOW = """
import json, os, psycopg, redis
with psycopg.connect(os.environ["DATABASE_URL"], connect_timeout=5) as conn:
    version, name = conn.execute(
        "SELECT current_setting('server_version_num')::int, current_database()"
    ).fetchone()
client = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"], socket_timeout=5)
print(json.dumps({
    "urls": {n: os.environ[n] for n in ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL")},
    "postgres": [version, name],
    "redis": client.ping(),
}))
"""


@pytest.fixture
def run_dir() -> Iterator[Path]:
    with scratch_dir() as path:
        yield path


def ensure_services(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["scripts/ensure-services.sh", sys.executable, "-c", SHOW],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", **env},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_services_that_do_not_answer_are_replaced_by_the_embedded_ones(run_dir: Path):
    closed = free_port()
    result = ensure_services(
        {
            "DATABASE_URL": f"postgres://postgres:postgres@127.0.0.1:{closed}/suite",
            "CACHE_URL": f"redis://127.0.0.1:{closed}/4",
            "CELERY_BROKER_URL": f"redis://127.0.0.1:{closed}/5",
            "TEST_SERVICES_DIR": str(run_dir),
        }
    )

    assert result.returncode == 0, result.stdout + result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["postgres"][0] >= 180000, "the embedded PostgreSQL 18"
    assert seen["postgres"][1] == "suite", "the database name is kept (and created)"
    assert seen["redis"] is True
    ports = json.loads((run_dir / "services.json").read_text())
    assert f"@127.0.0.1:{ports['postgres']['port']}/suite" in seen["urls"]["DATABASE_URL"]
    assert seen["urls"]["CACHE_URL"].endswith(f"@127.0.0.1:{ports['valkey']['port']}/4")
    assert seen["urls"]["CELERY_BROKER_URL"].endswith(f"@127.0.0.1:{ports['valkey']['port']}/5")
    assert "starting the embedded servers in their place" in result.stdout
    # Stopped with the command: neither server is left running.
    for pid_file in (run_dir / "postgres" / "postmaster.pid", run_dir / "valkey" / "valkey.pid"):
        assert not pid_file.exists()
    assert "database system is shut down" in (run_dir / "postgres.log").read_text()
    assert "ready to exit" in (run_dir / "valkey.log").read_text()


def test_services_that_answer_are_used_as_they_are(run_dir: Path):
    # The suite's own server, on its maintenance database (which always exists).
    db = settings.DATABASES["default"]
    url = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/postgres"
    result = ensure_services({"DATABASE_URL": url, "TEST_SERVICES_DIR": str(run_dir)})

    assert result.returncode == 0, result.stdout + result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["urls"]["DATABASE_URL"] == url
    assert seen["postgres"][1] == "postgres"
    assert not (run_dir / "postgres").exists(), "no embedded server started"


def test_a_server_elsewhere_that_does_not_answer_fails_the_run(run_dir: Path):
    result = ensure_services(
        {
            # A documentation address (RFC 5737): nothing answers there.
            "DATABASE_URL": "postgres://postgres:postgres@192.0.2.1:5432/suite",
            "TEST_SERVICES_DIR": str(run_dir),
        }
    )

    assert result.returncode == 1
    assert "PostgreSQL at 192.0.2.1:5432 cannot be used" in result.stderr
    assert not (run_dir / "postgres").exists()
