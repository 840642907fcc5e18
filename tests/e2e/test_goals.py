"""Goals on the running product: a run waiting a day is ended by its contact's goal event
(`exit_on_goal`), whichever processes take the trigger and the goal, the conversion is
stamped with the goal event's acceptance, and the report counts it from its summary
table."""

from typing import Any

from tests.e2e.client import Api, unique, until


def waits_for_a_purchase(trigger: str, goal: str) -> dict[str, Any]:
    return {
        "trigger": {"event": trigger},
        "start": "pause",
        "steps": [
            {"key": "pause", "type": "wait", "duration": "P1D", "next": "mark"},
            {"key": "mark", "type": "update_contact", "fields": {"nudged": True}, "next": None},
        ],
        "goal": {"event": goal, "within": "P2D"},
        "settings": {"exit_on_goal": True},
    }


def test_a_goal_event_ends_a_waiting_run_as_converted_and_the_report_counts_it(api: Api) -> None:
    trigger, goal = unique("signed.up."), unique("order.paid.")
    automation_id = api.automation(waits_for_a_purchase(trigger, goal))
    email = unique("goal-") + "@example.com"
    contact_id = api.contact(email)

    api.event(trigger, email)

    def run_in(status: str) -> dict[str, Any] | None:
        found = api.get(f"/automations/{automation_id}/runs", contact_id=contact_id)
        return found[0] if found and found[0]["status"] == status else None

    waiting = until(lambda: run_in("waiting"), "the run waiting a day")
    assert waiting["converted_at"] is None
    api.event(goal, email, total=42)

    done = until(lambda: run_in("completed"), "the run ended by the goal")
    assert done["terminal_reason"] == "converted"
    assert done["conversion_event_id"] is not None
    assert done["converted_at"] >= done["entered_at"]
    report = api.get(f"/automations/{automation_id}/report")
    assert (report["entered"], report["converted"]) == (1, 1)
    assert report["conversion_rate"] == 1.0
    # The run ended before its next step: the contact was never marked.
    contact = api.get(f"/contacts/{contact_id}")
    assert "nudged" not in contact["fields"]
