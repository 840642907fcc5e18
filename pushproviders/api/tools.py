"""The push provider endpoints as agent tools (see config.registries.agenttools)."""

from config.registries.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="push_providers_list",
        description=(
            "List a push app's providers (`fcm`, `apns`, `webpush`) with their status and "
            "`readiness` (which required settings are still missing; secrets are never "
            "shown). `app_id` is the app's id or public id, or one of its installations' ids."
        ),
        method="GET",
        path="/push/apps/{app_id}/providers",
        listing="all",
        path_values={"app_id": None},
        path_names={"app_id": "app_ref"},
    ),
]
