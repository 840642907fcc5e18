"""What the topology test checks once its load is over, over HTTP (and at the loopback SMTP
server and push stand-ins): first that the work is done (polled with a bound), then that
none of it was lost or done twice beyond what docs/API.md allows."""

import datetime as dt
import time
from collections import Counter
from functools import partial
from typing import Any

from bench.standins import ApnsStandin, FcmStandin
from tests.e2e.client import mail_to, until
from tests.e2e.topology_load import MARGIN_SECONDS, Load, Waiter, at
from tests.messaging.smtp_server import SmtpServer

# How long the work may take to be done once the load is over: a killed worker's claims
# wait out their lease (10 s, tests/e2e/topology.py) and the next sweep (5 to 10 s), and a
# wait past its deadline looks again every 5 s while its event is unprocessed.
QUIESCE_SECONDS = 90
# docs/API.md, Emails, Delivery: "at most the one message in flight can go out twice" for
# a worker that dies mid-batch. Push, Sending: a worker that dies mid-batch resends at
# most PUSH_RECORD_EVERY (10) notifications.
EMAILS_TWICE_PER_KILLED_WORKER = 1
PUSH_RECORD_EVERY = 10
ENDED = ("completed", "failed", "canceled")


class Checks:
    def __init__(self, load: Load, *, smtp: SmtpServer, fcm: FcmStandin, apns: ApnsStandin) -> None:
        self.load = load
        self.plan = load.plan
        self.spread = load.spread
        self.ledger = load.ledger
        self.smtp, self.fcm, self.apns = smtp, fcm, apns
        self.workers_killed = sum(name.startswith("worker") for name in load.stack.killed)
        self.runs: dict[str, list[dict[str, Any]]] = {}

    # --- the work done ------------------------------------------------------------------

    def wait_for_quiescence(self) -> None:
        deadline = time.monotonic() + QUIESCE_SECONDS

        def left() -> float:
            return max(1.0, deadline - time.monotonic())

        pending = list(self.ledger.names)

        def events_done() -> bool:
            pending[:] = self.ledger.pending(self.spread, pending)
            return not pending

        until(events_done, "every accepted event processed", seconds=left())
        for flow in (self.plan.reply_flow, self.plan.delay_flow, self.plan.paid_flow):
            until(
                partial(self.all_runs_ended, flow.automation_id),
                f"every run of {flow.trigger} ended",
                seconds=left(),
            )
        campaign = f"/campaigns/{self.plan.campaign_id}"
        until(
            lambda: self.spread.get(campaign)["status"] == "sent",
            "the campaign sent",
            seconds=left(),
        )
        for _, message_id in self.load.pushes:
            until(partial(self.push_final, message_id), "every push message final", seconds=left())
        imported = f"/imports/{self.plan.import_id}"
        until(
            lambda: self.spread.get(imported)["status"] == "committed",
            "the import committed",
            seconds=left(),
        )
        wanted = [*self.plan.members, *self.load.delayed]
        until(
            lambda: all(mail_to(self.smtp, email) for email in wanted),
            "an email to every campaign recipient and every delayed run",
            seconds=left(),
        )

    def push_final(self, message_id: str) -> bool:
        return bool(self.spread.get(f"/push/messages/{message_id}")["status"] != "queued")

    def all_runs_ended(self, automation_id: str) -> bool:
        runs = self.spread.every(f"/automations/{automation_id}/runs")
        self.runs[automation_id] = runs
        return all(run["status"] in ENDED for run in runs)

    # --- nothing lost, nothing twice ------------------------------------------------------

    def events_processed_once(self) -> None:
        """One event per idempotency key, whichever server took each send; each counted
        once in the catalog; each trigger starting one run."""
        ids = self.ledger.ids
        assert [key for key, found in ids.items() if len(found) != 1] == []
        by_name: dict[str, set[str]] = {}
        for key, name in self.ledger.names.items():
            by_name.setdefault(name, set()).update(ids[key])
        assert sum(map(len, by_name.values())) == len(ids), "two keys answered with one event"
        for name, events in by_name.items():
            [entry] = [
                found
                for found in self.spread.get("/event-types", search=name, source="customer")
                if found["event"] == name
            ]
            assert entry["occurrences_count"] == len(events), (name, entry, len(events))
        paid = self.runs[self.plan.paid_flow.automation_id]
        assert sorted(run["trigger_event_id"] for run in paid) == sorted(
            by_name[self.plan.paid_flow.trigger]
        )
        assert {run["status"] for run in paid} == {"completed"}

    def runs_ended_once(self) -> None:
        """Every run ended once: completed or canceled, never both, with one end on its
        timeline; each as its category expects."""
        reply_runs = self.runs[self.plan.reply_flow.automation_id]
        by_email = Counter(run["resolved_identity_value"] for run in reply_runs)
        assert by_email == Counter(waiter.email for waiter in self.load.waiters), by_email
        for waiter in self.load.waiters:
            run = self.run_of(waiter)
            ends = [
                step["key"]
                for step in run["steps"]
                if step["key"] in ("replied", "gave_up") and step["status"] == "completed"
            ]
            keys = [step["key"] for step in run["steps"]]
            assert len(keys) == len(set(keys)), run
            if run["status"] == "completed":
                assert run["canceled_at"] is None, run
                assert run["cancellation_requested_at"] is None, run
                assert ends == [run["completed_step_key"]], run
            else:
                assert run["status"] == "canceled", run
                assert waiter.category == "raced", run
                assert run["canceled_at"] is not None, run
                assert ends == [], run
            expected = {"early": "replied", "held": "replied", "silent": "gave_up"}
            expected["late"] = "gave_up"
            if waiter.category in expected:
                assert run["completed_step_key"] == expected[waiter.category], (waiter, run)
            if waiter.category == "raced" and run["status"] == "completed":
                assert waiter.cancel_status == 409, (waiter, run)
            if ends:
                fields = {ends[0]: True}
                contact = self.spread.post("/contacts/lookup", {"email": waiter.email})
                assert contact["fields"] == fields, (waiter, contact)
        delayed = self.runs[self.plan.delay_flow.automation_id]
        assert sorted(run["resolved_identity_value"] for run in delayed) == sorted(
            self.load.delayed
        )
        for run in delayed:
            assert run["status"] == "completed", run
            steps = [(step["key"], step["status"]) for step in run["steps"]]
            assert steps == [("pause", "completed"), ("mail", "completed")], run
            assert run["steps"][1]["email_id"] is not None, run

    def run_of(self, waiter: Waiter) -> dict[str, Any]:
        [run] = [
            run
            for run in self.runs[self.plan.reply_flow.automation_id]
            if run["resolved_identity_value"] == waiter.email
        ]
        return run

    def waits_decided_by_acceptance(self) -> None:
        """An awaited event accepted before the deadline resumed its wait, processed in
        time or not (the held ones only after it); one accepted after it did not."""
        for waiter in self.load.waiters:
            run = self.run_of(waiter)
            [wait] = run["waits"]
            deadline = at(wait["timeout_at"])
            assert waiter.timeout_at == deadline, (waiter, wait)
            if run["status"] == "canceled":
                assert wait["status"] in ("canceled", "matched"), run
                continue
            key = waiter.reply_key
            accepted = at(self.ledger.received_at[key]) if key is not None else None
            if waiter.category == "late":
                assert accepted is not None
                assert accepted >= deadline, (waiter, accepted)
            if waiter.category == "held":
                assert accepted is not None
                assert accepted <= deadline - dt.timedelta(seconds=MARGIN_SECONDS), waiter
            in_time = accepted is not None and accepted < deadline
            assert wait["status"] == ("matched" if in_time else "timed_out"), (waiter, run)
            if in_time:
                assert key is not None
                assert {wait["matched_event_id"]} == self.ledger.ids[key], (waiter, wait)

    def emails_delivered_once(self) -> None:
        """Every campaign recipient and every delayed run's contact got its email once, or
        twice for at most the one message in flight of each killed worker."""
        campaign = self.spread.get(f"/campaigns/{self.plan.campaign_id}")
        assert campaign["stats"]["sent"] == len(self.plan.members), campaign["stats"]
        counts = {
            **{
                email: self.subjects(email).count(self.plan.campaign_subject)
                for email in self.plan.members
            },
            **{
                email: self.subjects(email).count(self.plan.delay_subject)
                for email in self.load.delayed
            },
        }
        assert [email for email, count in counts.items() if not 1 <= count <= 2] == [], counts
        twice = [email for email, count in counts.items() if count == 2]
        assert len(twice) <= EMAILS_TWICE_PER_KILLED_WORKER * self.workers_killed, twice

    def subjects(self, email: str) -> list[str]:
        return [str(found.message["Subject"]) for found in mail_to(self.smtp, email)]

    def pushes_delivered_once(self) -> None:
        """Every installation got its notification once, or twice for at most
        PUSH_RECORD_EVERY deliveries of each killed worker."""
        counts = {}
        for owner, message_id in self.load.pushes:
            message = self.spread.get(f"/push/messages/{message_id}")
            assert message["status"] == "sent", message
            assert [d["status"] for d in message["deliveries"]] == ["sent"] * 3, message
            path = f"/3/device/{owner.apns_token}"
            counts[owner.fcm_token] = sum(m["token"] == owner.fcm_token for m in self.fcm.messages)
            counts[owner.apns_token] = sum(r.headers[":path"] == path for r in self.apns.delivered)
            counts[owner.browser.endpoint] = len(owner.browser.received)
        assert [device for device, count in counts.items() if not 1 <= count <= 2] == [], counts
        twice = [device for device, count in counts.items() if count == 2]
        assert len(twice) <= PUSH_RECORD_EVERY * self.workers_killed, twice

    def import_committed_once(self) -> None:
        """The import committed once: every row applied, none twice, its audience holding
        each imported contact once."""
        rows = len(self.plan.import_emails)
        imported = self.spread.get(f"/imports/{self.plan.import_id}")
        assert imported["status"] == "committed", imported
        assert imported["commit_rows"] == imported["committed_rows"] == rows, imported
        [audience] = [
            found
            for found in self.spread.every("/audiences")
            if found["name"] == self.plan.import_audience
        ]
        members = self.spread.every(f"/audiences/{audience['id']}/members")
        emails = sorted(member["contact"]["email"] for member in members)
        assert emails == sorted(self.plan.import_emails)
        for number, email in enumerate(self.plan.import_emails):
            contact = self.spread.post("/contacts/lookup", {"email": email})
            assert contact["fields"] == {"first_name": f"Person {number}"}, contact
