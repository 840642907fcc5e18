"""Segment-compatible ingest on the running product: the real Python client (segment's
`segment-analytics-python`, with the project key as write key) sends identify, track and
group to a web process; workers process the events, the track starts an automation that
mails the contact, and sending the same messages again from a new client changes
nothing, whichever processes take them."""

from typing import Any

from segment.analytics import Client

from tests.e2e.client import Api, mail_to, settle, unique, until
from tests.e2e.stack import Stack

# How long a resent batch has to show a second effect, were there one: the first batch's
# mail came within this.
RESEND_SECONDS = 6


def sends_one_email(trigger: str, template_id: str) -> dict[str, Any]:
    return {
        "trigger": {"event": trigger},
        "start": "welcome",
        "steps": [
            {"key": "welcome", "type": "send_email", "template_id": template_id, "next": None}
        ],
    }


def send(topology: Stack, messages: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> None:
    """The messages through a new client, flushed; any error the client met fails the test."""
    errors: list[Any] = []
    client = Client(
        topology.key("project"),
        host=topology.base_url,
        max_retries=0,
        on_error=lambda error, batch: errors.append(error),
    )
    for call, args, kwargs in messages:
        getattr(client, call)(*args, **kwargs)
    client.flush()
    client.join()
    assert errors == []


def test_a_segment_client_starts_an_automation_once_and_a_resend_changes_nothing(
    api: Api, topology: Stack, smtp: Any
) -> None:
    tag = unique("")
    email, user, company = f"segment-{tag}@example.com", f"user-{tag}", f"Company {tag}"
    # Segment's name "Checkout Done <tag>" is the event `checkout_done_<tag>`.
    template = api.email_template(subject="Thanks for your order", text="Thanks!")
    automation = api.automation(sends_one_email(f"checkout_done_{tag}", template))
    messages = [
        ("identify", (user, {"email": email, "plan": "pro"}), {"message_id": f"{tag}-1"}),
        ("track", (user, f"Checkout Done {tag}", {"total": 5}), {"message_id": f"{tag}-2"}),
        ("group", (user, company, {"seats": 3}), {"message_id": f"{tag}-3"}),
    ]

    send(topology, messages)

    until(lambda: len(mail_to(smtp, email)) == 1, f"the order mail to {email}")
    contact = api.post("/contacts/lookup", {"email": email})
    assert (contact["external_id"], contact["fields"]) == (user, {"plan": "pro"})
    audience = next(a for a in api.get("/audiences", limit=100) if a["name"] == company)
    members = api.get(f"/audiences/{audience['id']}/members")
    assert [member["contact_id"] for member in members] == [contact["id"]]

    send(topology, messages)

    settle(lambda: len(mail_to(smtp, email)) > 1, seconds=RESEND_SECONDS)
    assert len(mail_to(smtp, email)) == 1
    runs = api.get(f"/automations/{automation}/runs", contact_id=contact["id"])
    assert len(runs) == 1
    assert len(api.get(f"/audiences/{audience['id']}/members")) == 1
