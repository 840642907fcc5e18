"""What benchmarks share: the production server, keys, load, the psycopg baseline, results.

A benchmark module asks the context for what it needs; the server starts (on a fresh
`sendrealm_bench` database) the first time one asks for it and stops when the run ends.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from bench.loadgen import HttpSpec, Measurement, SqlSpec, run_clients

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
PYTHON = sys.executable
BIN = Path(PYTHON).parent


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


@dataclass
class BenchSettings:
    """Where the benchmark server keeps its state; dedicated, so a run may wipe it."""

    database_url: str = os.environ.get(
        "BENCH_DATABASE_URL", "postgres://postgres:postgres@127.0.0.1:5432/sendrealm_bench"
    )
    cache_url: str = os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/12")
    broker_url: str = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/13")
    duration: float = float(os.environ.get("BENCH_DURATION", "5"))
    server: str = os.environ.get("BENCH_SERVER", "granian")  # or gunicorn
    # One more worker than cores: while one waits on PostgreSQL another has the CPU.
    server_workers: int = int(os.environ.get("BENCH_SERVER_WORKERS", "3"))
    # Two Python threads per worker overlap the Redis and PostgreSQL round trips; more only
    # queue requests behind the GIL (longer tails, no more throughput on two cores).
    server_threads: int = int(os.environ.get("BENCH_SERVER_THREADS", "2"))
    client_processes: int = int(os.environ.get("BENCH_CLIENT_PROCESSES", "2"))
    lock_wait: float = float(os.environ.get("BENCH_LOCK_WAIT", "300"))


def _pg_params(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 5432,
        "user": unquote(parts.username or "postgres"),
        "password": unquote(parts.password or "") or None,
        "dbname": unquote(parts.path.lstrip("/")),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class BenchLock:
    """One run at a time per bench database: a run drops and recreates it."""

    def __init__(self, database_url: str, wait_seconds: float) -> None:
        digest = hashlib.sha256(database_url.encode()).hexdigest()[:12]
        self.path = Path(tempfile.gettempdir()) / f"sendrealm-bench-{digest}.lock"
        self.wait_seconds = wait_seconds
        self.file: Any = None

    def acquire(self) -> None:
        self.file = self.path.open("w")
        deadline = time.monotonic() + self.wait_seconds
        told = False
        while True:
            try:
                fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"another benchmark run holds {self.path}; waited {self.wait_seconds}s"
                    ) from None
                if not told:
                    log("another benchmark run uses the bench database; waiting for it")
                    told = True
                time.sleep(1)

    def release(self) -> None:
        if self.file is not None:
            self.file.close()  # closing drops the lock
            self.file = None


class Server:
    """The production WSGI server (granian), on loopback, against the bench database."""

    def __init__(self, settings: BenchSettings) -> None:
        self.settings = settings
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_SECRET_KEY": "bench-" + secrets.token_urlsafe(32),
            # Production requires one; the bench database is made fresh for every run.
            "SECRETS_ENCRYPTION_KEY": os.environ.get("SECRETS_ENCRYPTION_KEY")
            or base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": settings.database_url,
            "CACHE_URL": settings.cache_url,
            "CELERY_BROKER_URL": settings.broker_url,
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            # One key makes every request, faster than the default limit of 1,000 a
            # second: the limiter runs on each request and refuses none (its own cost is
            # bench_limits's to measure).
            "API_RATE_LIMIT": os.environ.get("BENCH_API_RATE_LIMIT", "1000000"),
        }
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def label(self) -> str:
        return self.settings.server

    def prepare(self) -> None:
        """A fresh database, migrated, and empty cache and broker databases."""
        import psycopg
        import redis
        from psycopg import sql

        params = _pg_params(self.settings.database_url)
        name = params.pop("dbname")
        with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        for url in (self.settings.cache_url, self.settings.broker_url):
            redis.Redis.from_url(url).flushdb()
        log(f"migrating {name}")
        self.manage("migrate", "--noinput", "-v0")

    def manage(self, *args: str) -> str:
        return subprocess.run(
            [PYTHON, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def gunicorn(self, application: str) -> list[str]:
        """gunicorn's command line for a WSGI application (BENCH_SERVER=gunicorn)."""
        return [
            str(BIN / "gunicorn"),
            f"--bind=127.0.0.1:{self.port}",
            f"--workers={self.settings.server_workers}",
            f"--threads={self.settings.server_threads}",
            "--worker-class=gthread",
            "--keep-alive=30",
            application,
        ]

    def command(self) -> list[str]:
        """The server's command line."""
        if self.settings.server == "gunicorn":
            return self.gunicorn("config.wsgi:application")
        # As in production (config/rsgi.py): bodies are read before a request takes
        # one of the SERVER_THREADS threads of its worker.
        self.env["SERVER_THREADS"] = str(self.settings.server_threads)
        return self.granian_rsgi(self.env.get("BENCH_RSGI_APPLICATION", "config.rsgi:application"))

    def granian_rsgi(self, application: str) -> list[str]:
        """granian's command line for an RSGI application, as production runs it."""
        return [
            str(BIN / "granian"),
            "--interface=rsgi",
            "--loop=uvloop",
            "--no-ws",
            "--host=127.0.0.1",
            f"--port={self.port}",
            f"--workers={self.settings.server_workers}",
            # As in production: a dead worker is replaced instead of stopping granian.
            "--respawn-failed-workers",
            "--no-access-log",
            application,
        ]

    def start(self) -> None:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        self.logfile = RESULTS_DIR / f"server-{self.port}.log"
        logfile = self.logfile.open("wb")
        workers, threads = self.settings.server_workers, self.settings.server_threads
        command = self.command()
        self.proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=logfile,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        logfile.close()
        deadline = time.monotonic() + (wait := float(os.environ.get("BENCH_START_SECONDS", 30)))
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited; see {self.logfile}")
            with (
                contextlib.suppress(OSError),
                # S310: the local bench server.
                urllib.request.urlopen(f"{self.base_url}/health", timeout=2) as response,  # noqa: S310
            ):
                if response.status == 200:
                    log(
                        f"{self.label} up at {self.base_url} ({workers} workers x "
                        f"{threads} threads)"
                    )
                    return
            time.sleep(0.2)
        raise RuntimeError(f"the server did not become healthy within {wait:.0f}s")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.proc = None


class CeilingServer(Server):
    """The lean ceiling (bench/ceiling.py: the same work as two API requests with no
    framework) with the API server's workers and threads, against the bench database,
    knowing one key from its environment.

    `interface="rsgi"` (the ceiling every `ceiling_ratio` is taken against) serves it as the
    API is served: granian's RSGI interface and the front that reads bodies first
    (bench/ceiling_front.py, config/net/rsgiserver.py), with the API server's settings.
    `interface="wsgi"` serves the same application on granian's WSGI interface, which has
    no body timeout (config/net/rsgiserver.py says why the API does not run on it): the
    `ceiling_wsgi_*` lines, and `wsgi_ceiling_ratio`, show what the front itself costs.
    With BENCH_SERVER=gunicorn both are gunicorn's, as the API's server then is."""

    def __init__(
        self, settings: BenchSettings, *, key: str, project_id: str, interface: str = "rsgi"
    ) -> None:
        super().__init__(settings)
        self.interface = interface
        self.env.update(
            {
                "CEILING_KEYS": json.dumps({key: project_id}),
                "CEILING_THREADS": str(settings.server_threads),
                "SERVER_THREADS": str(settings.server_threads),
            }
        )

    @property
    def label(self) -> str:
        return "the ceiling" if self.interface == "rsgi" else "the ceiling (WSGI interface)"

    def command(self) -> list[str]:
        workers, threads = self.settings.server_workers, self.settings.server_threads
        if self.settings.server == "gunicorn":
            return self.gunicorn("bench.ceiling:application")
        if self.interface == "rsgi":
            return self.granian_rsgi("bench.ceiling_front:application")
        return [
            str(BIN / "granian"),
            "--interface=wsgi",
            "--no-ws",
            "--host=127.0.0.1",
            f"--port={self.port}",
            f"--workers={workers}",
            f"--blocking-threads={threads}",
            "--respawn-failed-workers",
            "--no-access-log",
            "bench.ceiling:application",
        ]


# The event every single-event ingest line posts (bench_events, and the ceiling's).
INGEST_EVENT: dict[str, Any] = {
    "event": "order.completed",
    "email": "bench@example.com",
    "payload": {
        "order_id": "o-1001",
        "total": 42.5,
        "currency": "EUR",
        "items": [{"sku": "a", "qty": 1}],
    },
}
# What each ceiling line does, one request (bench/ceiling.py serves both): method, path,
# body.
CEILING_WORK: dict[str, tuple[str, str, Any]] = {
    "events_ingest": ("POST", "/events", INGEST_EVENT),
    "project_get": ("GET", "/project", None),
}


# A project in the bootstrap project's team; prints its id.
PROJECT_CODE = """
from tenancy.models import Project
team = Project.objects.get(pk="{project_id}").team
print(Project.objects.create(team=team, name="bench {name}").id)
"""


@dataclass
class Context:
    """Handed to every benchmark's `run(ctx)`."""

    settings: BenchSettings = field(default_factory=BenchSettings)
    _server: Server | None = None
    _keys: dict[str, Any] | None = None
    # Projects made for one benchmark each (`project`), by name.
    _projects: dict[str, str] = field(default_factory=dict)
    _lock: BenchLock | None = None
    # The ceiling's servers by interface ("rsgi", "wsgi"; `ceiling`).
    _ceiling_servers: dict[str, CeilingServer] = field(default_factory=dict)
    # The ceiling's measurements of this run, by interface, work and concurrency
    # (`ceiling_measure`).
    _ceilings: dict[tuple[str, str, int], Measurement] = field(default_factory=dict)

    def server(self) -> Server:
        """The running production server; started (fresh database) on first use, and again
        on the next use after a benchmark stopped it to have the machine to itself
        (bench_limits)."""
        if self._server is None:
            self._lock = BenchLock(self.settings.database_url, self.settings.lock_wait)
            self._lock.acquire()
            server = Server(self.settings)
            self._server = server
            server.prepare()
            server.start()
        elif self._server.proc is None:
            self._server.start()
        return self._server

    def project(self, name: str) -> str:
        """The id of a project of the bootstrap team made for one benchmark, once per run:
        for one that seeds what another of the run seeds too (contacts of the same
        addresses, an audience of the same name), which would collide in a shared one."""
        if name not in self._projects:
            code = PROJECT_CODE.format(project_id=self.keys()["project_id"], name=name)
            self._projects[name] = self.server().manage("shell", "-c", code).split()[-1]
        return self._projects[name]

    def keys(self) -> dict[str, Any]:
        """`manage.py bootstrap --json` on the bench database, run once."""
        if self._keys is None:
            self._keys = json.loads(self.server().manage("bootstrap", "--json"))
        return self._keys

    def ceiling(self, interface: str = "rsgi") -> CeilingServer:
        """The running lean ceiling (bench/ceiling.py) with the project key, served on
        `interface` (CeilingServer); started on first use, stopped at the end of the run."""
        if interface not in self._ceiling_servers:
            keys = self.keys()
            ceiling = CeilingServer(
                self.settings,
                key=keys["keys"]["project"],
                project_id=keys["project_id"],
                interface=interface,
            )
            self._ceiling_servers[interface] = ceiling
            ceiling.start()
        return self._ceiling_servers[interface]

    def ceiling_measure(
        self, work: str, concurrency: int, *, fresh: bool = False, interface: str = "rsgi"
    ) -> Measurement:
        """The ceiling doing `work` (a CEILING_WORK name) at `concurrency` clients for the
        run's duration: measured the first time a line asks for it (again when `fresh`) and
        kept for the run, for every line that compares with it."""
        if fresh or (interface, work, concurrency) not in self._ceilings:
            method, path, body = CEILING_WORK[work]
            self._ceilings[interface, work, concurrency] = self.http(
                path,
                method=method,
                key=self.keys()["keys"]["project"],
                body=body,
                concurrency=concurrency,
                server=self.ceiling(interface),
            )
        return self._ceilings[interface, work, concurrency]

    def ceiling_line(
        self, work: str, concurrency: int, baseline: Measurement, *, interface: str = "rsgi"
    ) -> dict[str, Any]:
        """The ceiling's own line, `ceiling_<work>_c<N>` (`ceiling_wsgi_<work>_c<N>` on
        granian's WSGI interface), against the raw psycopg baseline of the API line it
        stands beside; measured now, and kept for the run."""
        measured = self.ceiling_measure(work, concurrency, fresh=True, interface=interface)
        prefix = "ceiling" if interface == "rsgi" else f"ceiling_{interface}"
        return self.result(f"{prefix}_{work}_c{concurrency}", measured, baseline)

    def with_ceiling(self, line: dict[str, Any], work: str) -> dict[str, Any]:
        """An API line with the ceiling doing `work` at the line's concurrency beside it:
        which (`ceiling`), its rate (`ceiling_ops_per_s`) and `ceiling_ratio`, the line's
        `ops_per_s` over it; and `wsgi_ceiling_ratio` where the run measured the ceiling on
        granian's WSGI interface at that concurrency too."""
        concurrency = line["concurrency"]
        ceiling = self.ceiling_measure(work, concurrency).ops_per_s
        line["ceiling"] = f"ceiling_{work}_c{concurrency}"
        line["ceiling_ops_per_s"] = round(ceiling, 1)
        line["ceiling_ratio"] = round(line["ops_per_s"] / ceiling, 4) if ceiling else None
        wsgi = self._ceilings.get(("wsgi", work, concurrency))
        if wsgi is not None and wsgi.ops_per_s:
            line["wsgi_ceiling_ratio"] = round(line["ops_per_s"] / wsgi.ops_per_s, 4)
        return line

    @property
    def database_url(self) -> str:
        return self.settings.database_url

    def pg_dsn(self) -> str:
        """A libpq connection string for the bench database."""
        from psycopg.conninfo import make_conninfo

        params = _pg_params(self.settings.database_url)
        return make_conninfo(**{k: v for k, v in params.items() if v is not None})

    def http(
        self,
        path: str,
        *,
        concurrency: int,
        method: str = "GET",
        key: str | None = None,
        project: str | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        duration: float | None = None,
        requests: int | None = None,
        server: Server | None = None,
    ) -> Measurement:
        """`concurrency` keep-alive clients hitting the server (or another one a bench
        started, `server`) for a duration or a count."""
        all_headers = dict(headers or {})
        if key is not None:
            all_headers["Authorization"] = f"Bearer {key}"
        if project is not None:
            all_headers["X-Service-Project-Id"] = project
        raw = b""
        if body is not None:
            raw = json.dumps(body).encode()
            all_headers.setdefault("Content-Type", "application/json")
        base_url = (server or self.server()).base_url
        spec = HttpSpec.build(base_url, path, method=method, headers=all_headers, body=raw)
        return self._run(spec, concurrency, duration, requests)

    def sql(
        self,
        query: str,
        params: tuple[Any, ...] = (),
        *,
        concurrency: int,
        duration: float | None = None,
        requests: int | None = None,
    ) -> Measurement:
        """The baseline: `concurrency` threads, each on its own psycopg connection."""
        self.server()  # the database exists and is migrated
        return self._run(SqlSpec(self.pg_dsn(), query, params), concurrency, duration, requests)

    def _run(
        self,
        spec: HttpSpec | SqlSpec,
        concurrency: int,
        duration: float | None,
        requests: int | None,
    ) -> Measurement:
        if duration is None and requests is None:
            duration = self.settings.duration
        measurement = run_clients(
            spec,
            concurrency=concurrency,
            duration=duration,
            requests=requests,
            processes=self.settings.client_processes,
        )
        mean_ms = sum(measurement.latencies) / max(1, measurement.count) * 1000
        log(
            f"{spec.describe()} x{concurrency}: {measurement.ops_per_s:.0f} ops/s, "
            f"mean {mean_ms:.2f} ms, p99 {measurement.percentile_ms(0.99):.2f} ms, "
            f"max {max(measurement.latencies, default=0) * 1000:.1f} ms"
        )
        if measurement.errors:
            log(f"{measurement.errors} errors, first: {measurement.first_error}")
        if measurement.starved_clients:
            log(
                f"{measurement.starved_clients} of {concurrency} clients were never served in "
                "the window; the figures describe the others only"
            )
        if measurement.late_processes:
            log(f"{measurement.late_processes} load processes started late; figures are low")
        return measurement

    def result(self, name: str, measured: Measurement, baseline: Measurement) -> dict[str, Any]:
        """One JSON line: the measured work against the raw psycopg baseline."""
        ratio = measured.ops_per_s / baseline.ops_per_s if baseline.ops_per_s else None
        return {
            "name": name,
            "ops_per_s": round(measured.ops_per_s, 1),
            "p50_ms": round(measured.percentile_ms(0.50), 3),
            "p95_ms": round(measured.percentile_ms(0.95), 3),
            "p99_ms": round(measured.percentile_ms(0.99), 3),
            "baseline_ops_per_s": round(baseline.ops_per_s, 1),
            "ratio": round(ratio, 4) if ratio is not None else None,
            "concurrency": measured.concurrency,
            "errors": measured.errors + baseline.errors,
        }

    def result_in_rounds(
        self, name: str, measured: list[Measurement], baseline: list[Measurement]
    ) -> dict[str, Any]:
        """One JSON line for work measured in rounds, each a turn of it and a turn of its
        baseline back to back: the turns joined, and as `ratio` the median of the rounds'
        ratios (the machine's drift between rounds cancels out within each);
        `ratio_of_means` and `round_ratios` beside it."""
        rounds = [
            turn.ops_per_s / other.ops_per_s
            for turn, other in zip(measured, baseline, strict=True)
            if other.ops_per_s
        ]
        log(f"{name} by round: " + ", ".join(f"{value:.3f}" for value in rounds))
        line = self.result(name, Measurement.joined(measured), Measurement.joined(baseline))
        line["ratio_of_means"] = line["ratio"]
        line["ratio"] = round(statistics.median(rounds), 4) if rounds else None
        line["round_ratios"] = [round(value, 4) for value in rounds]
        return line

    def close(self) -> None:
        for ceiling in self._ceiling_servers.values():
            ceiling.stop()
        self._ceiling_servers.clear()
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None


class StdioProcess:
    """A stand-in server in a process of its own (`python -m <module> <args>`), driven by
    lines on its standard input and answering with lines on its standard output; it
    stops when its standard input closes."""

    def __init__(self, module: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [PYTHON, "-m", module, *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def write_line(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read_line(self) -> str:
        """The next answer; an empty string once the process has stopped."""
        assert self.proc.stdout is not None
        return self.proc.stdout.readline()

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
