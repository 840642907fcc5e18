"""The import endpoints as agent tools (see config.registries.agenttools).

A commit is live: agents preview it (`import_preview`, the prepare of `imports.commit`,
whose result lists every change) and run it with `prepared_action_execute`."""

from config.registries.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="imports_create",
        description=(
            "Upload contacts to import as JSON `rows` (objects of column -> value, at most "
            "10,000) with a `mapping` of columns to `email`, `external_id`, "
            "`fields.<name>`, `audience` or `topic` (an email or external id column is "
            "required), and `automation_effects`: `suppress` (default: the changes start "
            "no automation) or `trigger`. Nothing changes yet: preview it with "
            "`import_preview`. CSV files go through the REST endpoint."
        ),
        method="POST",
        path="/imports",
    ),
    AgentTool(
        name="import_preview",
        description=(
            "Preview an uploaded import: exact counts of valid and invalid rows, the total "
            "changes a commit makes (contacts created and updated, memberships, "
            "subscriptions) and up to 5 sample rows with their planned changes. The result "
            "is a prepared action: show the effects to the user, then commit with "
            "`prepared_action_execute` and its `prepared_action_id` before `expires_at`."
        ),
        method="POST",
        path="/imports/{import_id}/preview",
    ),
]

# The operation `prepared_action_execute` runs through this family's endpoint.
EXECUTE_PATHS = {"imports.commit": "/imports/{resource_id}/actions/commit/execute"}
