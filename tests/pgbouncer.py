"""Debian's PgBouncer in transaction mode between the tests' processes and PostgreSQL, as
docs/DEPLOY.md (PgBouncer) runs it in production:

    with PgBouncer(database_url, workdir) as pooled_url:
        ...  # DATABASE_URL=pooled_url, DATABASE_POOLER=transaction

It listens on 127.0.0.1 on a free port and logs in to the server of `database_url` as that
URL's user, for any database name (so the tests' databases, and the maintenance one, are
reached the same way). `make test` installs the package (ENSURE_PGBOUNCER=1 in
scripts/ensure-services.sh); without it the tests that need it skip, saying so
(`requires_pgbouncer`)."""

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn
from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
import pytest

from tests.processes import free_port

# Debian installs it in /usr/sbin, which is not on every user's PATH.
BINARY = os.environ.get("PGBOUNCER_BINARY") or shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
MISSING = (
    "PgBouncer is not installed: sudo apt-get install -y pgbouncer "
    "(or set PGBOUNCER_BINARY to where it is); make test installs it as root."
)
# PgBouncer refuses to run as root; as root it runs as the user Debian's package runs it as.
ROOT_RUNS_AS = "postgres"
START_SECONDS = 15


def installed() -> bool:
    return os.access(BINARY, os.X_OK)


requires_pgbouncer = pytest.mark.skipif(not installed(), reason=MISSING)


def _quoted(value: str) -> str:
    """A value in a [databases] connection string."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class PgBouncer:
    """One PgBouncer process in transaction mode in front of the server of
    `upstream_database_url`; entering starts it, waits until it answers and gives the URL
    of the same database through it; leaving stops it (its log stays in `workdir`).

    `pool_size` server connections per database: fewer than the clients, so clients take
    turns on the same server connections, as in production (default_pool_size)."""

    def __init__(
        self,
        upstream_database_url: str,
        workdir: Path,
        *,
        pool_size: int = 2,
        max_client_conn: int = 200,
    ) -> None:
        self.upstream = urlsplit(upstream_database_url)
        self.workdir = workdir
        self.pool_size = pool_size
        self.max_client_conn = max_client_conn
        self.port = 0
        self.config = workdir / "pgbouncer.ini"
        self.log = workdir / "pgbouncer.log"
        self.process: subprocess.Popen[bytes] | None = None

    # --- what the tests use -------------------------------------------------------------

    @property
    def url(self) -> str:
        """The upstream URL with PgBouncer's address: the same database, user and password."""
        user = self.upstream.username or "postgres"
        password = f":{self.upstream.password}" if self.upstream.password else ""
        netloc = f"{user}{password}@127.0.0.1:{self.port}"
        return urlunsplit(self.upstream._replace(netloc=netloc))

    def show(self, what: str) -> list[dict[str, Any]]:
        """A `SHOW` of PgBouncer's admin console (`POOLS`, `SERVERS`, `CLIENTS`): its rows."""
        console = urlunsplit(urlsplit(self.url)._replace(path="/pgbouncer", query=""))
        with psycopg.connect(console, autocommit=True, connect_timeout=5) as conn:
            cursor = conn.execute(f"SHOW {what}")
            names = [column.name for column in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    # --- start and stop -----------------------------------------------------------------

    def _write_config(self) -> None:
        upstream = self.upstream
        server = {
            "host": upstream.hostname or "127.0.0.1",
            "port": str(upstream.port or 5432),
            "user": unquote(upstream.username or "postgres"),
        }
        if upstream.password:
            server["password"] = unquote(upstream.password)
        lines = [
            "[databases]",
            # Any database name, on the upstream server as its user.
            "* = " + " ".join(f"{key}={_quoted(value)}" for key, value in server.items()),
            "",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {self.port}",
            "unix_socket_dir =",
            # Clients are the tests' own processes; every one logs in as the server's user.
            "auth_type = any",
            "pool_mode = transaction",
            # Not used in transaction mode (nothing of a session is left to reset); said here
            # as docs/DEPLOY.md says it.
            "server_reset_query =",
            f"default_pool_size = {self.pool_size}",
            f"max_client_conn = {self.max_client_conn}",
            # The test settings send `options` (synchronous_commit off), which PgBouncer 1.18
            # refuses; psql and some drivers send extra_float_digits.
            "ignore_startup_parameters = extra_float_digits,options",
            "log_connections = 0",
            "log_disconnections = 0",
        ]
        if os.geteuid() == 0:
            lines.append(f"user = {ROOT_RUNS_AS}")
        self.config.write_text("\n".join(lines) + "\n")

    def _listening(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 1):
            return True
        return False

    def start(self) -> str:
        if not installed():
            pytest.skip(MISSING)
        if os.geteuid() == 0:
            pwd.getpwnam(ROOT_RUNS_AS)  # KeyError names the missing user
        self.port = free_port()
        self._write_config()
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [BINARY, str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_SECONDS
        while not self._listening():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self._failed(f"PgBouncer did not listen on 127.0.0.1:{self.port}")
            time.sleep(0.05)
        # Once: after a failed server login PgBouncer holds its clients for a while.
        try:
            with psycopg.connect(self.url, connect_timeout=START_SECONDS) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as error:
            self._failed(f"PgBouncer did not reach the database: {error}")
        return self.url

    def _failed(self, what: str) -> NoReturn:
        self.stop()
        raise AssertionError(f"{what}\n{self.log.read_text(errors='replace')}")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        # SIGTERM: PgBouncer's immediate shutdown (SIGINT would wait for every client).
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
