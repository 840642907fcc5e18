"""`make run` end to end: scripts/run.py on SQLite and the filesystem broker in a temporary
directory starts from an empty database, serves an event its worker processes, lets the
printed staff login into the admin, and stops everything on Ctrl-C."""

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.processes import ROOT, children_of, free_port, reaped, request, wait_for

# The whole test, start to stop; typically a third of it.
BUDGET_SECONDS = 60


class Stack:
    """scripts/run.py with the embedded default moved into `run_dir`."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.deadline = time.monotonic() + BUDGET_SECONDS
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "RUN_DIR": str(run_dir),
            # The defaults, spelled out so neither the test run's services nor a .env file
            # take their place.
            "DATABASE_URL": f"sqlite:///{run_dir / 'db.sqlite3'}",
            "CELERY_BROKER_URL": "filesystem://",
            "CACHE_URL": "",
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "CELERY_CONCURRENCY": "1",
        }
        self.process = subprocess.Popen(
            [sys.executable, "scripts/run.py"],
            cwd=ROOT,
            env=env,
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
        """run.py's children (web, worker, beat) and theirs (granian's and Celery's)."""
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
def stack(tmp_path: Path) -> Iterator[Stack]:
    started = Stack(tmp_path)
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


def test_make_run_serves_an_event_its_worker_processes_and_stops_on_ctrl_c(stack):
    stack.wait_until(lambda: "Stop     Ctrl-C" in stack.output, "the banner")
    key = re.search(r"^\s+project\s+(sr_\S+)$", stack.output, re.MULTILINE)
    login = re.search(r"staff login (\S+) with password (\S+) ", stack.output)
    assert key is not None, "first start prints the keys"
    assert login is not None, "first start prints the staff login"

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

    # The worker processes it: the event's email becomes a contact.
    contact = stack.wait_until(contact_found, "the worker processing the event")
    with contextlib.closing(
        sqlite3.connect(f"file:{stack.run_dir / 'db.sqlite3'}?mode=ro", uri=True)
    ) as database:
        row = database.execute(
            "SELECT status, contact_id FROM events_event WHERE id = ?",
            [body["data"]["id"].replace("-", "")],
        ).fetchone()
    assert row == ("processed", contact["id"].replace("-", ""))
    assert admin_signs_in(stack.base_url, *login.groups())

    processes = stack.processes()
    assert len(processes) >= 5, "web, worker and beat, granian's worker, Celery's pool"
    assert stack.interrupt() == 0
    assert stack.output.rstrip().endswith("run    | stopped")
    wait_for(lambda: all(map(reaped, processes)), timeout=stack.left(), what="all stopped")
