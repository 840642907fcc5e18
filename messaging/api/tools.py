"""The template endpoints as agent tools (see config.agenttools)."""

from config.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="templates_list",
        description=(
            "List the project's message templates (email and push), oldest first, a page at "
            "a time (`limit`, `after`). Automations send a template's published version."
        ),
        method="GET",
        path="/templates",
        listing="page",
    ),
    AgentTool(
        name="templates_get",
        description=(
            "Read one template by id: name, channel, `from`, and the ids of its draft and "
            "published versions."
        ),
        method="GET",
        path="/templates/{template_id}",
    ),
    AgentTool(
        name="templates_create",
        description=(
            "Create a template with its first draft version. `channel` is `email` (subject, "
            "html, text, optional from) or `push` (title, body, data). Content is Liquid: "
            "`{{ contact.fields.first_name }}`, `{{ event.payload.order_id }}`. Check it "
            "with `templates_preview`; it must be published (REST `POST "
            "/templates/{id}/actions/publish`) before an automation can send it."
        ),
        method="POST",
        path="/templates",
    ),
    AgentTool(
        name="templates_update",
        description=(
            "Change a template's name or `from`, or edit its draft content (the draft is "
            "made from the published version when there is none). The channel never changes."
        ),
        method="PATCH",
        path="/templates/{template_id}",
    ),
    AgentTool(
        name="templates_preview",
        description=(
            "Render a template (its draft, or `version_id`) with sample `data`, a real "
            "`contact_id` and/or a sample `event` ({event, payload}); sends nothing. "
            "`undefined_variables` lists the variables the data did not provide."
        ),
        method="POST",
        path="/templates/{template_id}/preview",
    ),
]
