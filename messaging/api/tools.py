"""The template and campaign endpoints as agent tools (see config.registries.agenttools).

Sending a campaign is live: agents prepare it (`campaign_send_prepare`, whose result lists
the recipients and what is skipped) and send it with `prepared_action_execute`."""

from typing import Any

from config.registries.agenttools import AgentTool
from messaging.models.templates import Channel
from messaging.selectors.campaigns import campaign_get

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
    AgentTool(
        name="campaigns_list",
        description=(
            "List the project's email campaigns with their status (`draft`, `in_review`, "
            "`approved`, `scheduled`, `sending`, `sent`, `canceled`) and `stats`, a page at "
            "a time (`limit`, `after`). Filter by `status`."
        ),
        method="GET",
        path="/campaigns",
        query=("status",),
        listing="page",
    ),
    AgentTool(
        name="campaigns_create",
        description=(
            "Create an email campaign draft: `name`, a published email `template_id`, an "
            "`audience_id` or a `topic_id` (only subscribed contacts are reached), optional "
            "`from` and `scheduled_at`. Staff review it in the admin after it is submitted "
            "(REST `POST /campaigns/{id}/actions/submit`); only an approved campaign can be "
            "sent."
        ),
        method="POST",
        path="/campaigns",
    ),
    AgentTool(
        name="campaign_send_prepare",
        description=(
            "Prepare sending an approved email campaign. Nothing is sent yet: the result's "
            "`effects` give the recipients, the suppressed or unsubscribed contacts left "
            "out, the template version and the schedule. Show them to the user, then send "
            "with `prepared_action_execute` and the `prepared_action_id` before `expires_at`."
        ),
        method="POST",
        path="/campaigns/{campaign_id}/actions/send/prepare",
    ),
]


def campaign_send_path(*, project: Any, resource_id: str) -> str:
    """Email and push campaigns share `campaigns.send`; the execute path is the channel's."""
    push = campaign_get(project=project, channel=Channel.PUSH, campaign_id=resource_id)
    prefix = "push-campaigns" if push is not None else "campaigns"
    return f"/{prefix}/{resource_id}/actions/send/execute"


# The operation `prepared_action_execute` runs through this family's endpoints.
EXECUTE_PATHS = {"campaigns.send": campaign_send_path}
