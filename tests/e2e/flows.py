"""The automations the wait, timeout and pause tests use, published once per topology
before it processes any event: those tests are about waits, timeouts and pausing, so they
do not depend on how soon a publish reaches the workers (the trigger test is about that)."""

from dataclasses import dataclass
from typing import Any

from tests.e2e.client import Api, unique


@dataclass(frozen=True)
class Flow:
    automation_id: str
    trigger: str
    reply: str | None = None


def awaits(trigger: str, reply: str, *, timeout: str) -> dict[str, Any]:
    """Waits for `reply`: marks the contact `replied` when it comes, `gave_up` at the
    timeout."""
    return {
        "trigger": {"event": trigger},
        "start": "await_reply",
        "steps": [
            {
                "key": "await_reply",
                "type": "wait_for_event",
                "event": reply,
                "timeout": timeout,
                "next": "replied",
                "on_timeout": "gave_up",
            },
            {"key": "replied", "type": "update_contact", "fields": {"replied": True}, "next": None},
            {"key": "gave_up", "type": "update_contact", "fields": {"gave_up": True}, "next": None},
        ],
    }


def marks(trigger: str) -> dict[str, Any]:
    return {
        "trigger": {"event": trigger},
        "start": "mark",
        "steps": [
            {"key": "mark", "type": "update_contact", "fields": {"seen": True}, "next": None}
        ],
    }


def awaiting(api: Api, *, timeout: str) -> Flow:
    trigger, reply = unique("signed.up."), unique("replied.")
    return Flow(api.automation(awaits(trigger, reply, timeout=timeout)), trigger, reply)


def publish_flows(api: Api) -> dict[str, Flow]:
    pausable = unique("cart.abandoned.")
    return {
        # Long enough never to time out during the suite.
        "await_reply": awaiting(api, timeout="PT30M"),
        # Short enough for beat's sweep (every 5 s) to take it within seconds.
        "time_out": awaiting(api, timeout="PT2S"),
        "pausable": Flow(api.automation(marks(pausable)), pausable),
    }
