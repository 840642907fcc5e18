"""Several web servers, Celery workers and beats on one PostgreSQL and one Redis
(tests/e2e/topology.py), under a mixed load spread over every web server: event ingest
(single and batched, with idempotency keys and deliberate resends), automation runs that
wait (a plain wait; waits for an event with a timeout, answered in time, late, not at all,
raced by a cancel, and answered in time while every worker is stopped until past the
deadline), a campaign, push sends and a CSV import. During the load one web server, one
worker and one beat are killed with SIGKILL, one at a time, and started again.
Afterwards, over HTTP: nothing lost, every run ended once, every wait decided by when its
event was accepted, and nothing delivered twice beyond what docs/API.md allows for a
worker killed mid-send.

A bigger run by hand: `TOPOLOGY_SCALE` multiplies the volumes (default 1), and
`TOPOLOGY_WEBS`, `TOPOLOGY_WORKERS`, `TOPOLOGY_BEATS` set the processes (2, 3, 2), e.g.
`TOPOLOGY_SCALE=5 TOPOLOGY_WORKERS=6 pytest -p no:xdist tests/e2e/test_topology.py`;
every process goes through PgBouncer in transaction mode where it is installed
(`TOPOLOGY_PGBOUNCER=0`: directly to PostgreSQL)."""

import os
import time
from collections.abc import Iterator

import pytest

from bench.standins import ApnsStandin, FcmStandin, WebPushStandin
from tests import pgbouncer
from tests.e2e.conftest import outside_urls
from tests.e2e.logs import report
from tests.e2e.topology import MultiHostStack, PgBouncerMultiHostStack
from tests.e2e.topology_checks import Checks
from tests.e2e.topology_load import Load
from tests.e2e.topology_plan import Plan
from tests.messaging.smtp_server import SmtpServer

SIZES = {
    kind: int(os.environ.get(f"TOPOLOGY_{kind.upper()}S", default))
    for kind, default in (("web", 2), ("worker", 3), ("beat", 2))
}
SCALE = float(os.environ.get("TOPOLOGY_SCALE", "1"))
# Through PgBouncer in transaction mode (tests/pgbouncer.py) where it is installed, as
# `make test` installs it: the one run of the suite is the pooled one, while every other
# end-to-end test connects directly. `TOPOLOGY_PGBOUNCER=0` connects directly, `1` insists.
_POOLED = os.environ.get("TOPOLOGY_PGBOUNCER", "auto")
THROUGH_PGBOUNCER = _POOLED not in ("", "0") and (_POOLED != "auto" or pgbouncer.installed())
# Tracebacks expected from the killed processes: none. SIGKILL leaves a process no moment
# to log, the survivors see a dead peer only as a closed connection (PostgreSQL rolls its
# transaction back, Redis drops its connection, a client's request fails over) and a
# restarted process starts clean. Two beats starting at once write nothing of the schedule
# but the one that takes the lease (config/beat.py), so neither logs a lost race. Any
# traceback is a finding.
SMTP_DELAY_SECONDS = 0.1


@pytest.fixture(scope="module")
def slow_smtp() -> Iterator[SmtpServer]:
    """An SMTP server of this module's own that takes a while over each message, so a
    worker killed during the campaign is likely to be killed mid-batch."""
    server = SmtpServer(delay_seconds=SMTP_DELAY_SECONDS).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def multi_host(
    tmp_path_factory: pytest.TempPathFactory,
    slow_smtp: SmtpServer,
    fcm: FcmStandin,
    apns: ApnsStandin,
) -> Iterator[MultiHostStack]:
    kind = PgBouncerMultiHostStack if THROUGH_PGBOUNCER else MultiHostStack
    unavailable = kind.unavailable()
    if unavailable is not None:
        pytest.skip(unavailable)
    stack = kind(
        tmp_path_factory.mktemp(kind.name),
        outside_urls(slow_smtp, fcm, apns),
        webs=SIZES["web"],
        workers=SIZES["worker"],
        beats=SIZES["beat"],
    )
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
    problems = stack.tracebacks()
    assert not problems, (
        f"processes logged {len(problems)} tracebacks (logs: {stack.logdir}):\n{report(problems)}"
    )


def test_nothing_is_lost_or_done_twice_when_a_web_server_a_worker_and_a_beat_are_killed(
    multi_host: MultiHostStack,
    slow_smtp: SmtpServer,
    fcm: FcmStandin,
    apns: ApnsStandin,
    webpush: WebPushStandin,
) -> None:
    phases = Phases()
    plan = Plan.prepare(multi_host, fcm, webpush, scale=SCALE)
    phases.done("setup")
    load = Load(multi_host, plan, smtp_port=slow_smtp.port)
    try:
        load.run()
        phases.done("load")
        checks = Checks(load, smtp=slow_smtp, fcm=fcm, apns=apns)
        checks.wait_for_quiescence()
        load.restarted()
        phases.done("quiescence")
        checks.events_processed_once()
        checks.runs_ended_once()
        checks.waits_decided_by_acceptance()
        checks.emails_delivered_once()
        checks.pushes_delivered_once()
        checks.import_committed_once()
        phases.done("checks")
    finally:
        load.close()
    kinds = {name.rstrip("0123456789") for name in multi_host.killed}
    assert kinds == {"web", "worker", "beat"}, multi_host.killed
    print(  # (the run's shape and times, shown with -s)
        f"\n{load.summary()}\nclaimed more than once: {multi_host.claimed_again()}"
        f"\nstart {multi_host.start_seconds:.0f}s, {phases}"
    )


class Phases:
    """The seconds each phase of the test took."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.took: dict[str, float] = {}

    def done(self, phase: str) -> None:
        self.took[phase] = time.monotonic() - self.last
        self.last = time.monotonic()

    def __str__(self) -> str:
        return ", ".join(f"{phase} {seconds:.0f}s" for phase, seconds in self.took.items())
