"""Automations on the running product: a publish applies to the very next event, a wait is
matched whichever worker process handles its event, beat's sweep takes a timeout, and a
paused automation starts nothing. The last three use the automations of tests/e2e/flows.py,
published before the topology processed any event."""

import datetime as dt
import re
import time
from typing import Any

import pytest

from tests.e2e.client import Api, mail_to, settle, unique, until
from tests.e2e.logs import LogMark
from tests.e2e.stack import Stack

# Publish-then-event rounds of the trigger test: each round's event is processed before
# the next publish, so some worker always holds a trigger map built just before it.
TRIGGER_ROUNDS = 5
# Rounds of the wait test until one awaited event went to another worker than its trigger.
WAIT_ROUNDS = 8
# How long a web process leaves the events queue's wake-up task alone after sending one.
WAKE_DEBOUNCE_SECONDS = 1.2
# What beat logs when it sends the sweep that takes runs past their wait's deadline.
BEAT_SENT_SWEEP = "Sending due task automations.sweep_runs"
# What a worker logs when it claimed events: a wake-up task or the sweep that claimed some.
EVENTS_HANDLED = re.compile(r"events\.(process_batch|sweep)\[[^\]]+\] succeeded in [\d.]+s: [1-9]")


def sends_one_email(trigger: str, template_id: str) -> dict[str, Any]:
    return {
        "trigger": {"event": trigger},
        "start": "welcome",
        "steps": [
            {"key": "welcome", "type": "send_email", "template_id": template_id, "next": None}
        ],
    }


def at(moment: str) -> dt.datetime:
    return dt.datetime.fromisoformat(moment.replace("Z", "+00:00"))


def processed(api: Api, name: str, email: str, key: str) -> None:
    until(lambda: api.event_status(name, email, key) == "processed", f"{name} processed")


def run_of(api: Api, automation_id: str, contact_id: str) -> dict[str, Any] | None:
    found = api.get(f"/automations/{automation_id}/runs", contact_id=contact_id)
    assert len(found) <= 1, found
    return found[0] if found else None


def run_in(api: Api, automation_id: str, contact_id: str, *statuses: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        run = run_of(api, automation_id, contact_id)
        return run if run is not None and run["status"] in statuses else None

    return until(check, f"a run of {automation_id} for {contact_id} {' or '.join(statuses)}")


def workers_that_handled_events(topology: Stack, since: LogMark) -> set[str]:
    """The workers that logged claiming events since `since`. A task logs when it ends,
    which may be after its effects show through the API, so this waits for one."""

    def claimed() -> set[str]:
        logs = topology.worker_logs()
        return {log.stem for log in logs if EVENTS_HANDLED.search(since.since(log))}

    return until(claimed, "a worker logging that it claimed the events", seconds=5)


# Also through PgBouncer in transaction mode (tests/e2e/test_pgbouncer.py).
@pytest.mark.parametrize(
    "topology", ["make_run", "production", "production_pgbouncer"], indirect=True
)
def test_an_event_sent_at_once_after_a_publish_starts_a_run_and_its_email_arrives(
    topology, api, smtp
):
    template = api.email_template(
        subject="Order {{ event.payload.order }}", text="Thanks for order {{ event.payload.order }}"
    )
    email = unique("trigger-") + "@example.com"
    warm_up = unique("warm.up.")
    processed(api, warm_up, email, api.event(warm_up, email))

    published = []
    for number in range(TRIGGER_ROUNDS):
        trigger = unique("order.placed.")
        automation_id = api.automation(sends_one_email(trigger, template))
        key = api.event(trigger, email, order=number)  # at once: no pause after the publish
        processed(api, trigger, email, key)
        published.append(automation_id)

    def without_run() -> list[int]:
        return [n for n, automation in enumerate(published) if not api.runs(automation)]

    settle(lambda: not without_run(), seconds=5)
    assert without_run() == [], "rounds whose event, sent at once after the publish, started no run"
    subjects = until(
        lambda: (
            found
            if len(found := sorted(m.message["Subject"] for m in mail_to(smtp, email)))
            >= TRIGGER_ROUNDS
            else None
        ),
        f"{TRIGGER_ROUNDS} emails at the SMTP server",
    )
    assert subjects == [f"Order {number}" for number in range(TRIGGER_ROUNDS)]


@pytest.mark.parametrize("topology", ["production"], indirect=True)
def test_a_wait_is_matched_by_an_event_that_another_worker_process_handles(topology, api):
    flow = topology.prepared["flows"]["await_reply"]
    rounds = []
    for _ in range(WAIT_ROUNDS):
        email = unique("waiter-") + "@example.com"
        contact_id = api.contact(email)
        mark = topology.mark()
        api.event(flow.trigger, email)
        run_in(api, flow.automation_id, contact_id, "waiting")
        started_by = workers_that_handled_events(topology, mark)
        # A reply within a second of the trigger would ride on its wake-up (one a second),
        # which the worker that took the trigger drains: let the next one be a fresh task.
        time.sleep(WAKE_DEBOUNCE_SECONDS)
        mark = topology.mark()
        api.event(flow.reply, email, answer="yes")
        run = run_in(api, flow.automation_id, contact_id, "completed")
        assert [wait["status"] for wait in run["waits"]] == ["matched"], run
        assert run["completed_step_key"] == "replied", run
        matched_by = workers_that_handled_events(topology, mark)
        rounds.append((sorted(started_by), sorted(matched_by)))
        if len(started_by) == len(matched_by) == 1 and started_by != matched_by:
            break
    else:
        raise AssertionError(
            f"in {WAIT_ROUNDS} rounds no awaited event went to another worker than its "
            f"trigger (the workers that claimed events, trigger then reply: {rounds})"
        )


def test_beat_s_sweep_takes_a_wait_s_timeout(topology, api):
    flow = topology.prepared["flows"]["time_out"]
    email = unique("sleeper-") + "@example.com"
    contact_id = api.contact(email)
    mark = topology.mark()
    api.event(flow.trigger, email)

    run = run_in(api, flow.automation_id, contact_id, "completed")

    assert [wait["status"] for wait in run["waits"]] == ["timed_out"], run
    assert run["completed_step_key"] == "gave_up", run
    contact = api.post("/contacts/lookup", {"email": email})
    assert contact["fields"] == {"gave_up": True}
    [wait] = run["waits"]
    ended, deadline = at(run["completed_at"]), at(wait["timeout_at"])
    assert ended >= deadline, f"taken at {ended}, before its deadline {deadline}"
    until(
        lambda: any(BEAT_SENT_SWEEP in mark.since(log) for log in topology.logs),
        "beat sending the run sweep",
        seconds=5,
    )


def test_a_paused_automation_starts_no_run_and_starts_again_once_resumed(topology, api):
    flow = topology.prepared["flows"]["pausable"]
    automation_id = flow.automation_id
    email = unique("paused-") + "@example.com"
    contact_id = api.contact(email)
    # A first event runs it, so the workers know the automation as active.
    processed(api, flow.trigger, email, api.event(flow.trigger, email))
    run_in(api, automation_id, contact_id, "completed")

    api.post(f"/automations/{automation_id}/actions/pause")
    try:
        other = unique("paused-") + "@example.com"
        other_id = api.contact(other)
        processed(api, flow.trigger, other, api.event(flow.trigger, other))  # at once
        assert run_of(api, automation_id, other_id) is None, "a paused automation started a run"
    finally:
        api.post(f"/automations/{automation_id}/actions/resume")
    processed(api, flow.trigger, other, api.event(flow.trigger, other))
    run_in(api, automation_id, other_id, "completed")
