"""The contacts endpoints as agent tools (served by the MCP endpoint; see
config.registries.agenttools)."""

from config.registries.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="contacts_list",
        description=(
            "List the project's active contacts, oldest first, a page at a time. Pass "
            "`metadata.next` of one page as `after` to get the next; `limit` is 1..100."
        ),
        method="GET",
        path="/contacts",
        listing="page",
    ),
    AgentTool(
        name="contacts_get",
        description="Read one active contact (email, external_id, fields) by its id.",
        method="GET",
        path="/contacts/{contact_id}",
    ),
    AgentTool(
        name="contacts_lookup",
        description=(
            "Find the active contact with an email address or an external id (give exactly "
            "one). The result is the contact, or `null` (no structured content) when none "
            "matches; use it before `contacts_upsert` or `contacts_update` to learn a "
            "contact's id."
        ),
        method="POST",
        path="/contacts/lookup",
    ),
    AgentTool(
        name="contacts_upsert",
        description=(
            "Create the contact for an email, or update the active one with that email. "
            "`fields` merge key by key into the stored ones (a key set to null is removed); "
            "`created` says whether a new contact was made. An external_id held by another "
            "contact is a conflict."
        ),
        method="POST",
        path="/contacts/upsert",
    ),
    AgentTool(
        name="contacts_update",
        description=(
            "Change an active contact by id: any of `email`, `fields` (merged key by key; "
            "null removes a key) and `external_id` (null clears it). An email or external id "
            "held by another contact is a conflict."
        ),
        method="PATCH",
        path="/contacts/{contact_id}",
    ),
]
