"""The event endpoints as agent tools (see config.registries.agenttools)."""

from config.registries.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="events_send",
        description=(
            "Record a customer event for a contact named by `contact_id`, `external_id` or "
            "`email` (an unknown email creates the contact). Active automations triggered by "
            "the event start for that contact. Names are lower-case dotted words "
            "(`order.completed`); the `sendrealm.` prefix is reserved. Give an "
            "`idempotency_key` to make a resend return the stored event (`duplicate: true`)."
        ),
        method="POST",
        path="/events",
    ),
    AgentTool(
        name="event_types_list",
        description=(
            "List the event catalog: every event name seen in the project with its source "
            "(`customer` or `system`), counts and `schema_hint` (payload field types). "
            "Filter with `search` (part of the name) and `source`; use it to learn which "
            "events and payload fields automations can use."
        ),
        method="GET",
        path="/event-types",
        query=("search", "source"),
        listing="page",
    ),
]
