"""Audience triggers (CONTRACT section 20): `{"audience_entered": id}` or
`{"audience_left": id}` start a run when a contact joins or leaves the audience.

They ride on the system events the audiences family records in the transaction of each
membership change (`sendrealm.audience.entered` / `sendrealm.audience.left`, one per
change: a membership is unique, and an event is recorded only when the insert or delete
changed something): such a trigger is the trigger on that event with the audience's id
required in its payload. Event processing starts at most one run per automation and
event (`run_one_per_trigger_event`), so each change starts exactly one run however often
its event is processed."""

from typing import Any

from config.api.errors import Issue

AUDIENCE_EVENTS = {
    "audience_entered": "sendrealm.audience.entered",
    "audience_left": "sendrealm.audience.left",
}
_KINDS = ("event", *AUDIENCE_EVENTS)


def trigger_event_of(trigger: dict[str, Any]) -> str:
    """The event name that starts runs of the trigger."""
    for member, event in AUDIENCE_EVENTS.items():
        if member in trigger:
            return event
    return str(trigger["event"])


def trigger_audience(trigger: dict[str, Any]) -> str | None:
    """The audience id an audience trigger needs in the event's payload, else None."""
    for member in AUDIENCE_EVENTS:
        if member in trigger:
            return str(trigger[member]).lower()
    return None


def trigger_issues(trigger: dict[str, Any], prefix: str) -> list[Issue]:
    """Exactly one of `event`, `audience_entered`, `audience_left`."""
    given = [kind for kind in _KINDS if kind in trigger]
    if len(given) == 1:
        return []
    return [
        Issue(
            "invalid_trigger",
            f"{prefix}.trigger",
            "Must have exactly one of `event`, `audience_entered` or `audience_left`.",
        )
    ]
