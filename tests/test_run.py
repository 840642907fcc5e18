"""`make run` end to end: scripts/run.py with no DATABASE_URL, CACHE_URL or CELERY_BROKER_URL
starts its embedded PostgreSQL and Valkey in a temporary RUN_DIR, migrates the empty
database, serves an event its worker processes, answers `manage.py` commands run beside it,
lets the printed staff login into the admin, and stops everything, servers included, on
Ctrl-C."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.processes import (
    ROOT,
    children_of,
    free_port,
    reaped,
    request,
    scratch_dir,
    wait_for,
)

# The whole test, start to stop (a first start initializes the database and migrates it);
# typically a third of it.
BUDGET_SECONDS = 180
URL_NAMES = ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL")


class Stack:
    """scripts/run.py with its data in `run_dir`."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.deadline = time.monotonic() + BUDGET_SECONDS
        # No connection set, so the embedded servers serve it; not the test run's services.
        self.env = {
            **{name: value for name, value in os.environ.items() if name not in URL_NAMES},
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "RUN_DIR": str(run_dir),
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "CELERY_CONCURRENCY": "1",
        }
        self.process = subprocess.Popen(
            [sys.executable, "scripts/run.py"],
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def left(self) -> float:
        return max(0.1, self.deadline - time.monotonic())

    def wait_until(self, check: Callable[[], Any], what: str) -> Any:
        def still_running_and_check() -> Any:
            assert self.process.poll() is None, f"run.py exited with {self.process.returncode}"
            return check()

        return wait_for(still_running_and_check, timeout=self.left(), what=what)

    def processes(self) -> set[int]:
        """run.py's children (PostgreSQL, Valkey, web, worker, beat) and theirs (granian's
        and Celery's workers, PostgreSQL's backends)."""
        found = children_of(self.process.pid)
        for child in list(found):
            found |= children_of(child)
        return found

    def interrupt(self) -> int:
        """Ctrl-C: run.py stops its children and exits; returns its exit status."""
        self.process.send_signal(signal.SIGINT)
        status = self.process.wait(timeout=self.left())
        self.reader.join(timeout=self.left())  # its last lines
        return status

    def kill(self) -> None:
        # Its children have the kernel send them SIGTERM when it dies.
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


@pytest.fixture
def stack() -> Iterator[Stack]:
    with scratch_dir() as run_dir:
        started = Stack(run_dir)
        yield started
        started.kill()
        print(started.output)  # shown when the test failed


def admin_signs_in(base_url: str, username: str, password: str) -> bool:
    with httpx.Client(base_url=base_url, timeout=10) as client:
        page = client.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token is not None
        response = client.post(
            "/admin/login/?next=/admin/",
            data={"username": username, "password": password, "csrfmiddlewaretoken": token[1]},
        )
        return response.status_code == 302 and client.get("/admin/").status_code == 200


def server_pids(run_dir: Path) -> dict[str, int]:
    """The embedded servers' pids, from the files they keep in their data directories."""
    return {
        "postgres": int((run_dir / "postgres" / "postmaster.pid").read_text().split()[0]),
        "valkey": int((run_dir / "valkey" / "valkey.pid").read_text().split()[0]),
    }


def urls_written(run_dir: Path) -> dict[str, str]:
    lines = (run_dir / "services.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


def test_make_run_starts_its_servers_serves_and_stops_everything_on_ctrl_c(stack):
    stack.wait_until(lambda: "Stop     Ctrl-C" in stack.output, "the banner")
    key = re.search(r"^\s+project\s+(sr_\S+)$", stack.output, re.MULTILINE)
    login = re.search(r"staff login (\S+) with password (\S+) ", stack.output)
    assert key is not None, "first start prints the keys"
    assert login is not None, "first start prints the staff login"
    assert "PostgreSQL 18 on 127.0.0.1:" in stack.output
    assert "Valkey on 127.0.0.1:" in stack.output
    assert f"Data     PostgreSQL 18 and Valkey keep their data in {stack.run_dir}/" in stack.output

    # Both servers run as the launcher's children, on loopback, with the URLs it wrote.
    servers = server_pids(stack.run_dir)
    assert set(servers.values()) <= children_of(stack.process.pid)
    urls = urls_written(stack.run_dir)
    assert set(urls) == set(URL_NAMES)
    assert all("@127.0.0.1:" in url for url in urls.values())

    status, body = request("GET", f"{stack.base_url}/health")
    assert status == 200, body
    status, body = request(
        "POST",
        f"{stack.base_url}/events",
        {"event": "signup.completed", "email": "ada@example.com"},
        key=key[1],
    )
    assert status == 202, body
    assert body["data"]["status"] == "accepted"

    def contact_found() -> dict[str, Any] | None:
        status, found = request(
            "POST", f"{stack.base_url}/contacts/lookup", {"email": "ada@example.com"}, key=key[1]
        )
        assert status == 200, found
        return found["data"]

    # The worker processes it (through Valkey as the broker): the email becomes a contact,
    # in the embedded PostgreSQL.
    contact = stack.wait_until(contact_found, "the worker processing the event")
    with psycopg.connect(urls["DATABASE_URL"], connect_timeout=5) as database:
        row = database.execute(
            "SELECT status, contact_id::text, current_setting('server_version_num')::int "
            "FROM events_event WHERE id = %s",
            [body["data"]["id"]],
        ).fetchone()
    assert row is not None
    assert row[:2] == ("processed", contact["id"])
    assert row[2] >= 180000, "PostgreSQL 18"
    assert admin_signs_in(stack.base_url, *login.groups())

    # A command run beside it, with no URL set, finds the same servers (the keys it prints
    # work against the API).
    created = subprocess.run(
        [sys.executable, "manage.py", "bootstrap", "--json"],
        cwd=ROOT,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=stack.left(),
        check=True,
    )
    status, body = request(
        "GET", f"{stack.base_url}/project", key=json.loads(created.stdout)["keys"]["project"]
    )
    assert status == 200, body

    processes = stack.processes()
    assert len(processes) >= 7, "servers, web, worker and beat, granian's worker, Celery's pool"
    assert stack.interrupt() == 0
    assert stack.output.rstrip().endswith("run    | stopped")
    wait_for(
        lambda: all(map(reaped, processes | set(servers.values()))),
        timeout=stack.left(),
        what="all stopped, both servers included",
    )
    assert not (stack.run_dir / "services.env").exists(), "no URLs left for a stopped run"
    assert not (stack.run_dir / "postgres" / "postmaster.pid").exists(), "a clean shutdown"
