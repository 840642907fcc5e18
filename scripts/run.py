"""`make run`: migrate, then serve the API with a Celery worker and beat until Ctrl-C.

With no DATABASE_URL it first starts PostgreSQL 18, and with no CACHE_URL or
CELERY_BROKER_URL Valkey, from their pip wheels (scripts/embedded_services.py), their data
under RUN_DIR (`.run/`) kept between runs; the processes get their URLs, and so do
`manage.py` commands run meanwhile, through `RUN_DIR/services.env` (read by the local
settings, removed on stop).

Every child runs in its own process group, so stopping one stops whatever it forked (granian
and Celery workers). SIGINT or SIGTERM stops all of them, then the servers; so does any one
of them exiting. Should the launcher itself die, the kernel stops them all (Linux).
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import IO
from urllib.parse import unquote, urlsplit

import embedded_services

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HOST = os.environ.get("HOST", "127.0.0.1")
PORT = int(os.environ.get("PORT", "8000"))
CONCURRENCY = os.environ.get("CELERY_CONCURRENCY", "2")
STOP_GRACE_SECONDS = 10
# The URLs `make run` gives its processes, for the local settings of the commands a user
# runs meanwhile (config/settings/local.py); the name is theirs too.
SERVICES_FILE = "services.env"
URL_NAMES = ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL")

stopping = threading.Event()


def log(message: str) -> None:
    print(f"run    | {message}", flush=True)


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def manage(env: dict[str, str], *args: str, capture: bool = False) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        text=True,
        stdout=subprocess.PIPE if capture else None,
    )
    return result.stdout or ""


def ensure_postgres_database(url: str) -> None:
    """Creates the database DATABASE_URL names when the server answers but it is missing."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    parts = urlsplit(url)
    server = make_conninfo(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=unquote(parts.username or "postgres"),
        password=unquote(parts.password or "") or None,
        connect_timeout=5,
    )
    name = unquote(parts.path.lstrip("/"))
    try:
        psycopg.connect(server, dbname=name).close()
    except psycopg.OperationalError as exc:
        if "does not exist" not in str(exc):
            raise SystemExit(f"run: cannot connect to {parts.hostname}: {exc}") from None
        log(f"creating database {name}")
        with psycopg.connect(server, dbname="postgres", autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def pump(name: str, stream: IO[str]) -> None:
    for line in stream:
        sys.stdout.write(f"{name:<6} | {line}")
        sys.stdout.flush()


def start(name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        args,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Safe here: every child is forked before the first output thread starts.
        preexec_fn=lambda: embedded_services.dies_with_parent(signal.SIGTERM),
    )
    return proc


def forward_output(procs: dict[str, subprocess.Popen[str]]) -> None:
    for name, proc in procs.items():
        assert proc.stdout is not None
        threading.Thread(target=pump, args=(name, proc.stdout), daemon=True).start()


def stop(procs: dict[str, subprocess.Popen[str]]) -> None:
    # SIGTERM to each leader: granian and Celery shut their own children down (Celery
    # finishes the tasks in hand). Whatever is left in a group after the grace period,
    # leader or stuck child, is killed.
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for name, proc in procs.items():
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log(f"{name} did not stop within {STOP_GRACE_SECONDS}s; killing it")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


def web_command(
    *, host: str, port: int, workers: int = 1, static_root: Path = ROOT / "staticfiles"
) -> list[str]:
    """granian serving the API and, from `static_root`, the admin's static files. The RSGI
    interface with config/rsgi.py in front of Django: bodies are read on the event loop,
    with a timeout, before a request takes a thread (SERVER_THREADS of them a worker)."""
    return [
        str(BIN / "granian"),
        "--interface=rsgi",
        # The workers' event loop carries every request's I/O: uvloop's costs least.
        "--loop=uvloop",
        "--no-ws",
        f"--host={host}",
        f"--port={port}",
        f"--workers={workers}",
        # Without it one dead worker stops granian altogether; with it granian replaces
        # the worker (and still exits when replacements keep dying: a crash loop).
        "--respawn-failed-workers",
        "--access-log",
        "--static-path-route=/static",
        f"--static-path-mount={static_root}",
        "config.rsgi:application",
    ]


def wait_healthy(url: str, procs: dict[str, subprocess.Popen[str]], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not stopping.is_set():
        if any(proc.poll() is not None for proc in procs.values()):
            return False
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(url, timeout=2) as response,  # noqa: S310 - loopback
        ):
            if response.status == 200:
                return True
        time.sleep(0.3)
    return False


def first_start(env: dict[str, str]) -> dict[str, object] | None:
    """On an empty database, bootstraps the demo team and, with the local settings, the
    demo staff login; returns the keys and the login's password to show once."""
    probe = (
        "import django; django.setup(); from tenancy.models import Team; "
        "print(int(Team.objects.exists()))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        check=True,
        text=True,
        stdout=subprocess.PIPE,
    ).stdout.strip()
    if found == "1":
        return None
    created: dict[str, object] = json.loads(manage(env, "bootstrap", "--json", capture=True))
    # A printed password is for a development machine only (the command refuses under any
    # other settings), so it is asked for under the local ones alone.
    if env["DJANGO_SETTINGS_MODULE"] == "config.settings.local":
        created["admin"] = json.loads(manage(env, "create_demo_admin", "--json", capture=True))
    return created


def banner(created: dict[str, object] | None, data: str | None) -> None:
    base = f"http://{HOST}:{PORT}"
    lines = [
        "",
        f"API      {base}   (health: {base}/health, reference: {base}/docs, admin: {base}/admin/)",
    ]
    if created is not None:
        key_map = created["keys"]
        assert isinstance(key_map, dict)
        lines += [
            "Keys     first start: created the demo team; its keys, shown once:",
            *(f"           {kind:<14} {secret}" for kind, secret in key_map.items()),
            f"Try      curl -s -H 'Authorization: Bearer {key_map['project']}' {base}/project",
        ]
        admin = created.get("admin")
        if isinstance(admin, dict) and admin["password"] is not None:
            lines.append(
                f"Admin    first start: created the staff login {admin['username']} with "
                f"password {admin['password']} (shown once) for {base}/admin/"
            )
    if data is not None:
        lines.append(data)
    lines += [
        "Keys     .venv/bin/python manage.py bootstrap --json   prints working keys any time",
        "Admin    .venv/bin/python manage.py createsuperuser    makes a login of your own",
        "Stop     Ctrl-C",
        "",
    ]
    print("\n".join(lines), flush=True)


def run_dir_of(env: dict[str, str]) -> Path:
    return ROOT / (env.get("RUN_DIR") or ".run")


def embedded_servers(
    env: dict[str, str], run_dir: Path, servers: list[embedded_services.Server]
) -> None:
    """Starts PostgreSQL when DATABASE_URL is unset, Valkey when CACHE_URL or
    CELERY_BROKER_URL is, and points the unset ones at them (appending to `servers` as they
    start, so that a failure stops those already started)."""
    if not env.get("DATABASE_URL"):
        postgres = embedded_services.start_postgres(run_dir)
        servers.append(postgres)
        embedded_services.ensure_database(postgres, "sendrealm")
        env["DATABASE_URL"] = postgres.url("sendrealm")
        log(f"PostgreSQL 18 on 127.0.0.1:{postgres.port}, data in {run_dir / 'postgres'}")
    if not env.get("CACHE_URL") or not env.get("CELERY_BROKER_URL"):
        valkey = embedded_services.start_valkey(run_dir)
        servers.append(valkey)
        # The cache and the broker in databases of their own.
        env["CACHE_URL"] = env.get("CACHE_URL") or valkey.url("0")
        env["CELERY_BROKER_URL"] = env.get("CELERY_BROKER_URL") or valkey.url("1")
        log(f"Valkey on 127.0.0.1:{valkey.port}, data in {run_dir / 'valkey'}")


def data_line(servers: list[embedded_services.Server], run_dir: Path) -> str | None:
    """The banner's line on where the embedded servers keep their data."""
    if not servers:
        return None
    names = " and ".join("PostgreSQL 18" if s.name == "postgres" else "Valkey" for s in servers)
    shown = run_dir.relative_to(ROOT) if run_dir.is_relative_to(ROOT) else run_dir
    keep = "keep their data" if len(servers) > 1 else "keeps its data"
    return (
        f"Data     {names} {keep} in {shown}/ between runs; "
        f"delete {shown}/ (while stopped) to start afresh"
    )


def write_services_file(env: dict[str, str], run_dir: Path) -> Path:
    path = run_dir / SERVICES_FILE
    path.touch(mode=0o600)
    path.write_text("".join(f"{name}={env[name]}\n" for name in URL_NAMES))
    return path


def redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


def main() -> int:
    env = environment()
    os.chdir(ROOT)
    if not embedded_services.port_free(PORT, HOST):
        log(f"{HOST}:{PORT} is already in use; stop what listens there or set PORT")
        return 1
    run_dir = run_dir_of(env)
    run_dir.mkdir(parents=True, exist_ok=True)
    servers: list[embedded_services.Server] = []
    services_file: Path | None = None
    try:
        # Held for the launcher's life: a second make run on the same data stops here.
        _lock = (
            embedded_services.claim(run_dir)
            if not all(env.get(name) for name in URL_NAMES)
            else None
        )
        if env.get("DATABASE_URL"):
            ensure_postgres_database(env["DATABASE_URL"])
        embedded_servers(env, run_dir, servers)
        if servers:
            services_file = write_services_file(env, run_dir)
        return serve(env, data=data_line(servers, run_dir))
    except embedded_services.ServiceError as error:
        log(str(error))
        return 1
    except KeyboardInterrupt:
        # Ctrl-C before the processes started (while migrating): the servers still stop.
        log("interrupted")
        return 130
    finally:
        if services_file is not None:
            services_file.unlink(missing_ok=True)
        embedded_services.stop(servers)
        log("stopped")


def serve(env: dict[str, str], *, data: str | None) -> int:
    log(f"settings {env['DJANGO_SETTINGS_MODULE']}, database {redacted(env['DATABASE_URL'])}")
    log(f"broker {redacted(env['CELERY_BROKER_URL'])}, cache {redacted(env['CACHE_URL'])}")
    manage(env, "migrate", "--noinput")
    manage(env, "collectstatic", "--noinput", "-v0")
    created = first_start(env)

    def on_signal(signum: int, frame: object) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    procs = {
        "web": start("web", web_command(host=HOST, port=PORT), env),
        "worker": start(
            "worker",
            [
                str(BIN / "celery"),
                "-A",
                "config",
                "worker",
                "-l",
                "info",
                f"--concurrency={CONCURRENCY}",
                "--without-gossip",
                "--without-mingle",
            ],
            env,
        ),
        "beat": start("beat", [str(BIN / "celery"), "-A", "config", "beat", "-l", "info"], env),
    }
    forward_output(procs)
    code = 0
    try:
        if wait_healthy(f"http://{HOST}:{PORT}/health", procs, 60):
            banner(created, data)
        elif not stopping.is_set():
            log("the API did not become healthy within 60s")
            code = 1
            stopping.set()
        while not stopping.wait(0.5):
            for name, proc in procs.items():
                if proc.poll() is not None:
                    log(f"{name} exited with status {proc.returncode}; stopping the rest")
                    code = 1
                    stopping.set()
    finally:
        log("stopping")
        stop(procs)
    return code


if __name__ == "__main__":
    sys.exit(main())
