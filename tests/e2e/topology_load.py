"""The topology test's load (`Load`), spread over every web server while one web server,
one worker and one beat are killed and started again, on what `Plan` set up
(tests/e2e/topology_plan.py)."""

import datetime as dt
import itertools
import re
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from tests.e2e.client import unique, until
from tests.e2e.load import Ledger, Spread, Worker
from tests.e2e.logs import LogMark
from tests.e2e.topology import MultiHostStack
from tests.e2e.topology_plan import Devices, Plan, scaled

# How long after a wait's deadline the late replies are sent. A reply that should count as
# accepted in time is sent at least MARGIN before the deadline: docs/API.md's one edge (an
# insert not yet committed when the deadline is looked at counts as after it) stays out of
# the way.
LATE_AFTER_SECONDS = 0.6
MARGIN_SECONDS = 0.5
# The categories of waits: answered in time, never, after the deadline, in time while
# every worker is stopped until past the deadline, and at once with a cancel.
CATEGORIES = ("early", "silent", "late", "held", "raced")
# Events a load batch carries, and the contacts the plain events are about.
BATCH = 10
SHOPPERS = 20
# New events a second of plain ingest sends, all through the load (every kill included).
EVENTS_PER_SECOND = 16
# How long the load goes on after the worker is killed.
LOAD_AFTER_KILL_SECONDS = 3
# How long the test looks for a worker in the middle of sending emails to kill.
BUSY_SECONDS = 10
# When a beat logged sending a periodic task.
SENT = re.compile(r"^(\S+ \S+) INFO celery.beat Scheduler: Sending due task", re.MULTILINE)
# Worker log lines of a task taken and of one finished.
RECEIVED = re.compile(r"Task ([\w.]+)\[([0-9a-f-]+)\] received")
FINISHED = re.compile(r"Task [\w.]+\[([0-9a-f-]+)\] (?:succeeded|failed|retry)")


def at(moment: str) -> dt.datetime:
    return dt.datetime.fromisoformat(moment.replace("Z", "+00:00"))


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def sleep_until(moment: dt.datetime) -> None:
    time.sleep(max(0.0, (moment - now()).total_seconds()))


@dataclass
class Waiter:
    """A contact whose run waits for the reply flow's event, and what the test did."""

    category: str
    email: str
    trigger_key: str
    run_id: str = ""
    contact_id: str = ""
    timeout_at: dt.datetime | None = None
    reply_key: str | None = None
    cancel_status: int | None = None


@dataclass
class Load:
    stack: MultiHostStack
    plan: Plan
    ledger: Ledger = field(default_factory=Ledger)
    waiters: list[Waiter] = field(default_factory=list)
    delayed: list[str] = field(default_factory=list)
    # Push sends: the devices' owner and the message's id.
    pushes: list[tuple[Devices, str]] = field(default_factory=list)
    # The import's commit, as its execute answered.
    commit: dict[str, Any] = field(default_factory=dict)
    # Seconds each killed process was down (until it served again), and what the killed
    # worker was working on.
    down: dict[str, float] = field(default_factory=dict)
    victim_held: str = "nothing seen"
    smtp_port: int = 0

    def __post_init__(self) -> None:
        self.over = threading.Event()
        self.restarting: Worker | None = None
        self.spread = Spread(self.stack.base_urls, self.plan.key)
        self.personal = Spread(
            self.stack.base_urls, self.plan.personal, project_id=self.plan.project_id
        )

    def close(self) -> None:
        self.spread.close()
        self.personal.close()

    def run(self) -> None:
        """The load, with one kill of each kind of process during it, one at a time."""
        try:
            self.under_load()
        finally:
            self.over.set()

    def under_load(self) -> None:
        """The web server is killed while the first waits are decided, the beat sending
        the periodic tasks while the second ones wait for its sweeps, the worker in the
        middle of sending the campaign; each one only once the one before serves again.
        The load ends a while after the last kill; that worker's restart is waited for by
        `restarted`."""
        ingest = Worker("ingest", self.ingest)
        ingest.start()
        first = Worker("first-waits", lambda: self.waits(CATEGORIES))
        first.start()
        time.sleep(1)
        restart = self.kill("web1")
        self.waiters += first.outcome(120)
        restart.outcome(120)
        second = Worker("second-waits", lambda: self.waits(("early", "silent", "late", "raced")))
        second.start()
        self.kill(self.sending_beat()).outcome(120)
        mark = self.stack.mark()
        self.send_work()
        self.restarting = self.kill(self.busy_worker(mark))
        killed = time.monotonic()
        self.waiters += second.outcome(120)
        self.over.wait(max(0.0, killed + LOAD_AFTER_KILL_SECONDS - time.monotonic()))
        self.over.set()
        ingest.outcome(120)

    def restarted(self) -> None:
        """Until the last process killed serves again."""
        if self.restarting is not None:
            self.restarting.outcome(120)

    def kill(self, name: str) -> Worker:
        """Kills `name` at once and starts it again in the background (the thread
        returned), while the load goes on."""

        def again() -> None:
            self.down[name] = self.stack.kill_and_restart(name)

        restart = Worker(f"restart-{name}", again)
        restart.start()
        return restart

    def summary(self) -> str:
        down = ", ".join(f"{name} down {seconds:.1f}s" for name, seconds in self.down.items())
        return (
            f"{len(self.ledger.names)} events ({self.ledger.resends} resends), "
            f"{len(self.waiters)} waits, {len(self.delayed)} delayed emails, "
            f"{len(self.plan.members)} campaign recipients, {len(self.pushes)} push sends, "
            f"{len(self.plan.import_emails)} rows imported; {down}; the killed worker "
            f"held {self.victim_held}; {self.spread.failovers} requests failed over"
        )

    # --- event ingest -----------------------------------------------------------------

    def ingest(self) -> None:
        """Plain events until the load is over, alternately of a name no automation takes
        and one that starts a run, alone and in batches, with deliberate resends: earlier
        keys again, alone or in a batch, and one key twice in a batch."""
        rate = EVENTS_PER_SECOND * self.plan.scale
        names = (self.plan.viewed, self.plan.paid_flow.trigger)
        shoppers = [unique(f"shopper{number}-") + "@example.com" for number in range(SHOPPERS)]
        sent: list[tuple[str, str, str]] = []
        began = time.monotonic()
        for round_ in itertools.count(1):
            if self.over.is_set():
                return
            size = 1 if round_ % 4 == 0 else BATCH
            fresh = [
                (names[n % 2], shoppers[n % SHOPPERS], unique("ev-"))
                for n in range(len(sent), len(sent) + size)
            ]
            if size == 1:
                self.ledger.send(self.spread, *fresh[0])
            else:
                again = [sent[-1], sent[len(sent) // 2]] if sent and round_ % 3 == 0 else []
                twice = [fresh[0]] if round_ % 5 == 0 else []
                self.ledger.send_batch(self.spread, fresh + again + twice)
            sent += fresh
            if round_ % 6 == 0:
                self.ledger.send(self.spread, *sent[len(sent) // 3])
            self.over.wait(max(0.0, began + len(sent) / rate - time.monotonic()))

    # --- waits for an event -------------------------------------------------------------

    def waits(self, categories: tuple[str, ...]) -> list[Waiter]:
        per = scaled(2, self.plan.scale)
        group = [
            Waiter(category, unique(f"{category}-") + "@example.com", unique("trigger-"))
            for category in categories
            if category != "held"
            for _ in range(per)
        ]
        self.start_waiting(group)
        for waiter in self.of(group, "early"):
            self.in_time(waiter, self.reply(waiter))
        racers = [Worker("race", partial(self.race, w)) for w in self.of(group, "raced")]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.outcome(60)
        held = []
        if "held" in categories:
            held = [
                Waiter("held", unique("held-") + "@example.com", unique("trigger-"))
                for _ in range(per)
            ]
            self.hold(held)
        for waiter in sorted(self.of(group, "late"), key=lambda w: w.timeout_at or now()):
            assert waiter.timeout_at is not None
            sleep_until(waiter.timeout_at + dt.timedelta(seconds=LATE_AFTER_SECONDS))
            self.reply(waiter)
        return group + held

    @staticmethod
    def of(group: list[Waiter], category: str) -> list[Waiter]:
        return [waiter for waiter in group if waiter.category == category]

    def start_waiting(self, group: list[Waiter]) -> None:
        """Sends the trigger of each, then waits until every run is `waiting`."""
        flow = self.plan.reply_flow
        for waiter in group:
            self.ledger.send(self.spread, flow.trigger, waiter.email, waiter.trigger_key)

        def runs() -> dict[str, Any] | None:
            found = {
                run["resolved_identity_value"]: run
                for run in self.spread.every(f"/automations/{flow.automation_id}/runs")
            }
            ready = all(found.get(w.email, {}).get("status") == "waiting" for w in group)
            return found if ready else None

        found = until(runs, f"{len(group)} runs waiting", seconds=60)
        for waiter in group:
            run = found[waiter.email]
            waiter.run_id, waiter.contact_id = run["id"], run["contact_id"]
            waiter.timeout_at = at(run["waits"][0]["timeout_at"])

    def reply(self, waiter: Waiter) -> str:
        """The awaited event; its acceptance time."""
        waiter.reply_key = unique("reply-")
        flow = self.plan.reply_flow
        assert flow.reply is not None
        answer = self.ledger.send(
            self.spread, flow.reply, waiter.email, waiter.reply_key, answer="yes"
        )
        return str(answer["received_at"])

    @staticmethod
    def in_time(waiter: Waiter, accepted_at: str) -> None:
        """What the test is about holds: the reply meant to come in time was accepted at
        least MARGIN_SECONDS before its wait's deadline (else the machine is too slow)."""
        accepted = at(accepted_at)
        assert waiter.timeout_at is not None
        assert accepted <= waiter.timeout_at - dt.timedelta(seconds=MARGIN_SECONDS), (
            f"the {waiter.category} reply was accepted at {accepted}, too close to its "
            f"wait's deadline {waiter.timeout_at} to test what it should"
        )

    def race(self, waiter: Waiter) -> None:
        """A cancel and the awaited event at once, through different servers."""
        path = f"/automations/{self.plan.reply_flow.automation_id}/runs/{waiter.run_id}/cancel"
        cancel = Worker("cancel", lambda: self.spread.call("POST", path, {"reason": "raced"}))
        cancel.start()
        self.reply(waiter)
        waiter.cancel_status = cancel.outcome(60).status_code
        assert waiter.cancel_status in (202, 409), waiter

    def hold(self, group: list[Waiter]) -> None:
        """Runs waiting; every worker stopped; the awaited events accepted before the
        deadline; the workers going on only once every deadline has passed. The events
        can only be processed after the deadlines, and must still resume the waits."""
        self.start_waiting(group)
        self.stack.pause("worker")
        try:
            for waiter in group:
                self.in_time(waiter, self.reply(waiter))
            last = max(waiter.timeout_at or now() for waiter in group)
            sleep_until(last + dt.timedelta(seconds=0.5))
        finally:
            self.stack.resume("worker")

    # --- sends and imports ------------------------------------------------------------

    def send_work(self) -> None:
        """The campaign sent, a push to each device owner (one sent twice with its key),
        the import committed (its execute sent twice), and runs that wait a second and
        then send an email."""
        started = self.spread.post(
            f"/campaigns/{self.plan.campaign_id}/actions/send", status=(202, 409)
        )
        if started.get("status") != "sending":  # a retry of a send a killed server began
            status = self.spread.get(f"/campaigns/{self.plan.campaign_id}")["status"]
            assert status in ("sending", "sent"), status
        for owner in self.plan.devices:
            key = unique("push-")
            body = {
                "app_id": self.plan.push_app,
                "contact_id": owner.contact_id,
                "title": "Shipped",
                "body": unique("Your order "),
            }
            message = self.push(body, key, status=(200, 202))
            self.pushes.append((owner, str(message["id"])))
            if len(self.pushes) == 1:
                again = self.push(body, key, status=200)
                assert again["id"] == message["id"], (message, again)
        execute = f"/imports/{self.plan.import_id}/actions/commit/execute"
        body = {"prepared_action_id": self.plan.prepared_action_id, "idempotency_key": unique("k-")}
        self.commit = self.personal.post(execute, body, status=202)
        assert self.personal.post(execute, body, status=(200, 202)) == self.commit
        for _ in range(scaled(6, self.plan.scale)):
            email = unique("browser-") + "@example.com"
            self.ledger.send(self.spread, self.plan.delay_flow.trigger, email, unique("later-"))
            self.delayed.append(email)

    def push(self, body: dict[str, Any], key: str, *, status: tuple[int, ...] | int) -> Any:
        response = self.spread.call("POST", "/push/send", body, headers={"Idempotency-Key": key})
        wanted = status if isinstance(status, tuple) else (status,)
        assert response.status_code in wanted, response.text[:2000]
        return response.json()["data"]

    def sending_beat(self) -> str:
        """The beat that sent a periodic task last, by the logs: the one holding the
        schedule when only one beat is active at a time; any, when every beat sends."""
        last = {
            process.name: SENT.findall(process.log.read_text(errors="replace"))[-1:]
            for process in self.stack.of_kind("beat")
        }
        return max(last, key=lambda name: last[name] or [""])

    def busy_worker(self, mark: LogMark) -> str:
        """A worker in the middle of sending a batch of emails (connected to the SMTP
        server), looked for up to BUSY_SECONDS; else the one that took most tasks since
        `mark` without finishing them."""
        deadline = time.monotonic() + BUSY_SECONDS
        while time.monotonic() < deadline:
            sending = self.stack.connected_to(self.smtp_port)
            if sending:
                self.victim_held = "a batch of emails (connected to the SMTP server)"
                return sending[0]
            time.sleep(0.02)
        held = {}
        for process in self.stack.of_kind("worker"):
            text = mark.since(process.log)
            finished = set(FINISHED.findall(text))
            held[process.name] = [
                name for name, task in RECEIVED.findall(text) if task not in finished
            ]
        victim = max(held, key=lambda name: len(held[name]))
        self.victim_held = f"tasks taken but not finished: {held[victim]}"
        return victim
