"""granian as `make run` starts it survives a crashed worker: the other worker keeps
answering and a replacement takes the dead one's place."""

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.processes import ROOT, children_of, free_port, reaped, request, run_script, wait_for

# The server's health check reaches the test database.
pytestmark = pytest.mark.django_db


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


class Granian:
    """The API served the way scripts/run.py serves it, with `workers` workers."""

    def __init__(
        self, tmp_path: Path, workers: int, environment: dict[str, str] | None = None
    ) -> None:
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        self.log = tmp_path / "granian.log"
        static_root = tmp_path / "static"
        static_root.mkdir()
        command = run_script().web_command(
            host="127.0.0.1", port=port, workers=workers, static_root=static_root
        )
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env={
                    **os.environ,
                    "DJANGO_SETTINGS_MODULE": "config.settings.test",
                    "DATABASE_URL": _database_url(),
                    **(environment or {}),
                },
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def healthy(self) -> bool:
        return request("GET", f"{self.base_url}/health")[0] == 200

    def workers(self) -> set[int]:
        return children_of(self.process.pid)

    def started(self) -> int:
        """How many workers have told granian they serve (replacements included); each
        worker's runtime thread says so on a line of its own (`Started worker-1 runtime-1`)."""
        return len(re.findall(r"^\[INFO\] Started worker-\d+$", self.log.read_text(), re.M))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=5)


@pytest.fixture
def granian(tmp_path: Path) -> Iterator[Granian]:
    server = Granian(tmp_path, workers=2)
    yield server
    server.stop()
    print(server.log.read_text())  # shown when the test failed


def test_a_killed_worker_is_replaced_while_the_other_keeps_answering(granian):
    wait_for(lambda: granian.started() == 2, timeout=30, what="two workers serving")
    workers = granian.workers()
    assert len(workers) == 2
    assert granian.healthy()
    victim = min(workers)

    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: reaped(victim), timeout=10, what="granian reaping the killed worker")

    answers = [request("GET", f"{granian.base_url}/health")[0] for _ in range(20)]
    assert answers == [200] * 20
    replaced = wait_for(
        lambda: (now := granian.workers()) - workers and len(now) == 2 and now,
        timeout=30,
        what="a replacement worker",
    )
    assert victim not in replaced
    assert workers - {victim} < replaced, "the surviving worker kept running"
    wait_for(lambda: granian.started() == 3, timeout=30, what="the replacement serving")
    assert granian.healthy()
    assert granian.process.poll() is None
