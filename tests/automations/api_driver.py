"""Drives the run engine tests through the API: templates and automations made, and
events sent, through the API, and the workers' loop run in-process."""

import copy
from typing import Any

from automations.services.advance import runs_advance_batch
from automations.services.triggers import triggers_forget_local
from events.services.processing import events_process_batch
from messaging.services.delivery import emails_deliver_batch
from pushproviders.services.delivery import push_deliver_batch


def drain() -> dict[str, int]:
    """What the workers do, in-process, until nothing is due: process events, advance runs,
    deliver emails and push messages. Counts what each claimed."""
    counts = {"events": 0, "runs": 0, "emails": 0, "push": 0}
    while True:
        events = events_process_batch().claimed
        runs = runs_advance_batch().claimed
        emails = emails_deliver_batch()
        push = push_deliver_batch()
        counts["events"] += events
        counts["runs"] += runs
        counts["emails"] += emails
        counts["push"] += push
        if not (events or runs or emails or push):
            return counts


def forget_triggers() -> None:
    triggers_forget_local()


def email_template(api: Any, key: str, **content: Any) -> str:
    """A published email template (made and published through the API); its id."""
    body = {
        "name": content.pop("name", "Welcome"),
        "channel": "email",
        "from": "Shop <shop@example.com>",
        "subject": "Thanks {{ contact.fields.first_name }}",
        "html": "<p>Order {{ event.payload.order_id }}</p>",
        "text": "Order {{ event.payload.order_id }}",
        **content,
    }
    response = api.post("/templates", body, key=key)
    assert response.status_code == 201, response.json()
    template_id = response.json()["data"]["id"]
    published = api.post(f"/templates/{template_id}/actions/publish", key=key)
    assert published.status_code == 200, published.json()
    return str(template_id)


def automation(api: Any, key: str, definition: dict[str, Any], *, publish: bool = True) -> str:
    """An automation made (and published) through the API; its id."""
    response = api.post(
        "/automations", {"name": "Flow", "definition": copy.deepcopy(definition)}, key=key
    )
    assert response.status_code == 201, response.json()
    automation_id = response.json()["data"]["id"]
    if publish:
        action(api, key, automation_id, "publish")
    return str(automation_id)


def action(api: Any, key: str, automation_id: str, name: str) -> dict[str, Any]:
    response = api.post(f"/automations/{automation_id}/actions/{name}", {}, key=key)
    assert response.status_code == 200, response.json()
    return dict(response.json()["data"])


def event(api: Any, key: str, name: str, **body: Any) -> str:
    """Ingests one event through `POST /events`; its id."""
    body.setdefault("email", "ada@example.net")
    response = api.post("/events", {"event": name, **body}, key=key)
    assert response.status_code == 202, response.json()
    return str(response.json()["data"]["id"])


def runs(api: Any, key: str, automation_id: str, **params: Any) -> list[dict[str, Any]]:
    response = api.get(f"/automations/{automation_id}/runs", {"limit": 100, **params}, key=key)
    assert response.status_code == 200, response.json()
    return list(response.json()["data"])


def one_run(api: Any, key: str, automation_id: str) -> dict[str, Any]:
    found = runs(api, key, automation_id)
    assert len(found) == 1, found
    return found[0]


def steps_of(run: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """The timeline as (key, status, outcome)."""
    return [(step["key"], step["status"], step["outcome"]) for step in run["steps"]]


def send_then_await(template_id: str, **overrides: Any) -> dict[str, Any]:
    """Send an email, then wait up to a week for the review (a second email thanks for it),
    else exit."""
    definition: dict[str, Any] = {
        "trigger": {"event": "order.completed"},
        "start": "welcome",
        "steps": [
            {
                "key": "welcome",
                "type": "send_email",
                "template_id": template_id,
                "next": "await_review",
            },
            {
                "key": "await_review",
                "type": "wait_for_event",
                "event": "review.submitted",
                "timeout": "P7D",
                "next": "check",
                "on_timeout": "gave_up",
            },
            {
                "key": "check",
                "type": "branch",
                "condition": {
                    "all": [
                        {"path": "steps.await_review.outcome", "op": "eq", "value": "event"},
                        {
                            "path": "steps.await_review.event.payload.rating",
                            "op": "gte",
                            "value": 4,
                        },
                    ]
                },
                "then": "tag_happy",
                "else": None,
                "next": None,
            },
            {"key": "tag_happy", "type": "update_contact", "fields": {"happy": True}, "next": None},
            {"key": "gave_up", "type": "exit", "next": None},
        ],
    }
    definition.update(overrides)
    return definition
