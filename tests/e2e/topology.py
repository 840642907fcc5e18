"""The product past one machine: several web servers (granian), Celery workers and beat
processes, each a separate OS process as a host of its own would run it, on one
PostgreSQL database and one Redis. A test kills any of them with SIGKILL (its whole
process group, as when its host dies) and starts it again with the same command.

`PgBouncerMultiHostStack` is the same with Debian's PgBouncer in transaction mode between
every process and PostgreSQL (`PgBouncerStack`'s `_database_env`)."""

import contextlib
import os
import signal
import time
from pathlib import Path

import httpx
import psycopg
from psycopg import sql

from tests.e2e.stack import START_SECONDS, PgBouncerStack, Process, ProductionStack, Stack
from tests.processes import children_of, free_port, run_script

# Every lease short enough that a killed worker's claims are taken over within the test
# (the defaults, one to five minutes, are for production's patience), and batches small
# enough that a campaign, an import and a burst of emails are spread over the workers.
TUNED = {
    "EVENTS_LEASE_SECONDS": "10",
    "AUTOMATIONS_LEASE_SECONDS": "10",
    "EMAIL_LEASE_SECONDS": "10",
    "PUSH_LEASE_SECONDS": "10",
    "IMPORT_LEASE_SECONDS": "10",
    "CAMPAIGN_FANOUT_LEASE_SECONDS": "10",
    "EMAIL_CLAIM_BATCH_SIZE": "10",
    "CAMPAIGN_FANOUT_BATCH_SIZE": "10",
    "IMPORT_CHUNK_ROWS": "20",
}
# What each kind of process logs once it serves (granian answers /health instead).
READY = {"worker": " ready.", "beat": "beat: Starting..."}
READY_SECONDS = 60

# The work queues' tables (config/workqueue/): what a killed worker may have held.
WORK_TABLES = (
    "events_event",
    "automations_runjob",
    "messaging_campaignfanout",
    "messaging_emaildelivery",
    "pushproviders_pushdelivery",
    "imports_importchunk",
)


class MultiHostStack(ProductionStack):
    """`webs` granian servers (each with `web_workers` workers) on ports of their own,
    `workers` Celery workers (concurrency 1) and `beats` beat processes, with the
    production settings and `TUNED` (overridden by `settings`, such as a setting another
    topology needs)."""

    name = "multi_host"

    def __init__(
        self,
        workdir: Path,
        outside: dict[str, str],
        *,
        webs: int = 2,
        workers: int = 3,
        beats: int = 2,
        web_workers: int = 1,
        settings: dict[str, str] | None = None,
    ) -> None:
        super().__init__(workdir, outside)
        self.ports = [self.port] + [free_port() for _ in range(webs - 1)]
        self.base_urls = [f"http://127.0.0.1:{port}" for port in self.ports]
        self.sizes = {"web": webs, "worker": workers, "beat": beats}
        self.web_workers = web_workers
        self.settings = {**TUNED, **(settings or {})}
        # The processes killed, in order (a name each time).
        self.killed: list[str] = []
        self.start_seconds = 0.0

    def start(self) -> None:
        began = time.monotonic()
        cache_url, broker_url = self._redis_urls()
        self._create_database()
        self.env = {**self.production_env(cache_url, broker_url), **self.settings}
        self.manage("migrate", "--noinput", "-v0")
        static = self.workdir / "static"
        static.mkdir()
        for number, port in enumerate(self.ports, 1):
            command = run_script().web_command(
                host="127.0.0.1", port=port, workers=self.web_workers, static_root=static
            )
            self.spawn(f"web{number}", command)
        for number in range(1, self.sizes["worker"] + 1):
            self.spawn(f"worker{number}", self.worker_command(number))
        for number in range(1, self.sizes["beat"] + 1):
            self.spawn(f"beat{number}", self.beat_command())
        self.set_up_accounts()
        for process in self.processes:
            self.wait_ready(process, since=0)
        self.start_seconds = time.monotonic() - began

    def stop(self) -> None:
        for process in self.processes:
            process.signal(signal.SIGCONT)
        Stack.stop(self)
        self.stop_services()

    # --- the processes ----------------------------------------------------------------

    def process(self, name: str) -> Process:
        [found] = [process for process in self.processes if process.name == name]
        return found

    def of_kind(self, kind: str) -> list[Process]:
        return [process for process in self.processes if process.name.rstrip("0123456789") == kind]

    def wait_ready(self, process: Process, *, since: int) -> None:
        """Until `process` serves: /health for a web server, else its ready line in its
        log after offset `since`."""
        kind = process.name.rstrip("0123456789")
        url = self.base_urls[int(process.name.removeprefix("web")) - 1] if kind == "web" else ""
        deadline = time.monotonic() + (START_SECONDS if since == 0 else READY_SECONDS)
        while time.monotonic() < deadline:
            if not process.running():
                raise AssertionError(f"{process.name} exited (log: {process.log})")
            if kind == "web":
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                        return
            else:
                with process.log.open("rb") as log:
                    log.seek(since)
                    if READY[kind] in log.read().decode(errors="replace"):
                        return
            time.sleep(0.1)
        raise AssertionError(f"{process.name} did not become ready (log: {process.log})")

    def kill_and_restart(self, name: str) -> float:
        """SIGKILL to `name`'s process group, then the same command again, waited for
        until it serves; the seconds it was down."""
        began = time.monotonic()
        process = self.process(name)
        process.kill()
        self.killed.append(name)
        since = process.log.stat().st_size
        again = process.respawned()
        self.processes[self.processes.index(process)] = again
        self.wait_ready(again, since=since)
        return time.monotonic() - began

    def pause(self, kind: str) -> None:
        """SIGSTOP to every process group of `kind`: they hold what they hold and do
        nothing until `resume`."""
        for process in self.of_kind(kind):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.popen.pid, signal.SIGSTOP)

    def resume(self, kind: str) -> None:
        for process in self.of_kind(kind):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.popen.pid, signal.SIGCONT)

    def claimed_again(self) -> dict[str, int]:
        """Rows of each work queue claimed more than once: taken over once a killed
        worker's lease ran out, or retried. For the test's report, not its checks."""
        found = {}
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            for table in WORK_TABLES:
                query = sql.SQL("SELECT count(*) FROM {} WHERE attempts > 1")
                row = conn.execute(query.format(sql.Identifier(table))).fetchone()
                found[table] = int(row[0]) if row is not None else 0
        return {table: count for table, count in found.items() if count}

    def connected_to(self, port: int) -> list[str]:
        """The workers with a connection open to 127.0.0.1:`port` (the SMTP server: a
        worker sending a batch of emails holds their claim and one connection)."""
        remote = f"0100007F:{port:04X}"
        inodes = set()
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[2] == remote and fields[3] == "01":  # ESTABLISHED
                inodes.add(f"socket:[{fields[9]}]")
        found = []
        for process in self.of_kind("worker"):
            pids = {process.popen.pid, *children_of(process.popen.pid)}
            links = set()
            for pid in pids:
                with contextlib.suppress(OSError):
                    for fd in Path(f"/proc/{pid}/fd").iterdir():
                        with contextlib.suppress(OSError):
                            links.add(os.readlink(fd))
            if links & inodes:
                found.append(process.name)
        return found


class PgBouncerMultiHostStack(MultiHostStack, PgBouncerStack):
    """The same processes through PgBouncer in transaction mode (DATABASE_POOLER=transaction),
    migrations included, with fewer server connections than the processes have clients."""

    name = "multi_host_pgbouncer"
