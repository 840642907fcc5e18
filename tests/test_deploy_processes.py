"""The Procfile's lines run as written, each through a shell as a process manager runs it,
with the production settings on a fresh database: `release` migrates it, `web` answers
`/health`, beat's sweeps reach each worker kind through its own queues, and every process
stops by itself on SIGTERM (docs/DEPLOY.md, Taking a host away)."""

import base64
import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import psycopg
import pytest
import redis
from psycopg import sql

from tests.processes import ROOT, free_port, request, spawn_logged, wait_for
from tests.test_deploy_files import procfile_commands

BIN = Path(sys.executable).parent
STOP_SECONDS = 60
# A sweep of each worker kind's queues (config/celery.py), every 5 or 10 s on beat.
SWEEP_OF = {
    "worker": "events.sweep",
    "sender": "messaging.sweep_emails",
    "importer": "imports.sweep",
}


def server_conninfo() -> dict[str, object]:
    parts = urlsplit(os.environ["DATABASE_URL"])
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 5432,
        "user": unquote(parts.username or "postgres"),
        "password": unquote(parts.password or "") or None,
    }


@pytest.fixture
def database() -> Iterator[str]:
    """A fresh, empty database's URL, dropped afterwards."""
    conninfo = server_conninfo()
    name = f"deploy_{secrets.token_hex(6)}"
    with psycopg.connect(dbname="postgres", autocommit=True, **conninfo) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    parts = urlsplit(os.environ["DATABASE_URL"])
    yield parts._replace(path=f"/{name}").geturl()
    with psycopg.connect(dbname="postgres", autocommit=True, **conninfo) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def production_env(database_url: str, port: int) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "PYTEST_", "CELERY_", "CACHE_"))
        and name != "DATABASE_URL"
    }
    return {
        **env,
        # `python`, `granian` and `celery` of the Procfile are this virtualenv's.
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(48),
        "SECRETS_ENCRYPTION_KEY": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": database_url,
        "CACHE_URL": os.environ["CACHE_URL"],
        "CELERY_BROKER_URL": os.environ["CELERY_BROKER_URL"],
        "PORT": str(port),
        "WEB_CONCURRENCY": "1",
        "PYTHONUNBUFFERED": "1",
    }


def started(command: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return spawn_logged(["/bin/sh", "-c", f"exec {command}"], env, log)


def test_the_procfile_lines_start_work_together_and_stop_on_sigterm(database, tmp_path):
    procfile = procfile_commands((ROOT / "Procfile").read_text())
    port = free_port()
    env = production_env(database, port)
    for url in (env["CACHE_URL"], env["CELERY_BROKER_URL"]):
        redis.Redis.from_url(url).flushdb()
    build = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr

    release = subprocess.run(
        ["/bin/sh", "-c", procfile["release"]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert release.returncode == 0, release.stderr

    logs = {name: tmp_path / f"{name}.log" for name in procfile if name != "release"}
    running = {name: started(procfile[name], env, log) for name, log in logs.items()}
    try:
        _, body = wait_for(
            lambda: (
                (answer := request("GET", f"http://127.0.0.1:{port}/health"))[0] == 200 and answer
            ),
            timeout=90,
            what="web answering /health",
        )
        assert body["data"] == {"database": "ok", "broker": "ok"}
        for kind, task in SWEEP_OF.items():
            wait_for(
                lambda kind=kind, task=task: f"Task {task}[" in logs[kind].read_text(),
                timeout=90,
                what=f"{kind} receiving {task} from beat",
            )
    finally:
        for process in running.values():
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        codes = {}
        for name, process in running.items():
            try:
                codes[name] = process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                codes[name] = None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    assert codes == dict.fromkeys(running, 0), {
        name: logs[name].read_text()[-2000:] for name, code in codes.items() if code != 0
    }
    tracebacks = {
        name: log.read_text() for name, log in logs.items() if "Traceback" in log.read_text()
    }
    assert tracebacks == {}
    for kind in SWEEP_OF:
        text = logs[kind].read_text()
        assert re.search(rf"{kind}@\S+ ready", text), text[-2000:]
        assert "Warm shutdown" in text, text[-2000:]
