"""The automations the wait, timeout and pause tests use, published once per topology
before it processes any event: those tests are about waits, timeouts and pausing, so they
do not depend on how soon a publish reaches the workers (the trigger test is about that)."""

from dataclasses import dataclass
from typing import Any

from bench import keys
from bench.standins import FcmStandin
from tests.e2e.client import Api, unique
from tests.pushproviders.sending import APNS_BUNDLE_ID, APNS_KEY_ID, APNS_TEAM_ID


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


def push_app(api: Api, fcm: FcmStandin) -> dict[str, Any]:
    """A push app with its three providers: FCM at the loopback stand-in, APNs (sandbox)
    and Web Push with the bench's keys."""
    app: dict[str, Any] = api.post("/push/apps", {"name": unique("app-")}, status=201)
    providers: dict[str, dict[str, Any]] = {
        "fcm": {"service_account": keys.service_account(token_uri=fcm.token_uri)},
        "apns": {
            "apns_key_id": APNS_KEY_ID,
            "apns_team_id": APNS_TEAM_ID,
            "apns_private_key": keys.apns_p8(),
            "apns_bundle_id": APNS_BUNDLE_ID,
            "apns_environment": "sandbox",
        },
        "webpush": {
            "web_vapid_private_key": keys.vapid_pair()[0],
            "web_vapid_public_key": keys.vapid_pair()[1],
            "web_vapid_subject": "mailto:push@example.com",
        },
    }
    for platform, settings in providers.items():
        api.post(
            f"/push/apps/{app['id']}/providers", {"platform": platform, **settings}, status=201
        )
    return app
